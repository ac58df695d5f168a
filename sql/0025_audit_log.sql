-- The audit log: who changed what in a project (keys, agents, the judge key, deletions,
-- retention, sign-ins). Append-only twice over: the triggers below refuse every UPDATE, DELETE
-- and TRUNCATE, whoever connects (the app's role included); and each entry's hash covers its
-- content and the previous entry's hash, so a superuser who turns the triggers off to edit or
-- remove an entry breaks the chain there (app/domain/audit.py says how it is computed).
CREATE TABLE audit_log (
    project_id   uuid NOT NULL REFERENCES projects(id),
    -- The entry's place in its project's chain: 1, 2, 3... without gaps.
    seq          bigint NOT NULL,
    at           timestamptz NOT NULL,
    -- {"kind": "api_key", "id", "prefix"}, {"kind": "sign_in_link"}, {"kind": "cli", ...}
    actor        jsonb NOT NULL,
    -- What the `actor` filter matches: a key's prefix, else the actor's kind.
    actor_label  text NOT NULL,
    action       text NOT NULL,
    object_type  text,
    object_id    text,
    -- As the server saw it; text, not inet, so it reads back exactly as it was hashed.
    ip           text,
    changes      jsonb NOT NULL,
    prev_hash    bytea NOT NULL,
    entry_hash   bytea NOT NULL,
    PRIMARY KEY (project_id, seq),
    CONSTRAINT audit_log_object_whole CHECK ((object_type IS NULL) = (object_id IS NULL))
);
CREATE INDEX audit_log_action_idx ON audit_log (project_id, action, seq);
CREATE INDEX audit_log_actor_idx ON audit_log (project_id, actor_label, seq);

CREATE FUNCTION audit_log_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only: % is refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_log_no_update_or_delete BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_refuse_change();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_refuse_change();
