-- Settings -> Members invites a person by email and role: a one-time link, valid 7 days, shown to
-- the inviter to send. Only the token's hash is kept; following the link sets a password and
-- joins the organisation with the role.

CREATE TABLE invitations (
    token_hash       bytea PRIMARY KEY,
    organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    email            text NOT NULL,
    role             text NOT NULL,
    invited_by       uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    expires_at       timestamptz NOT NULL,
    used_at          timestamptz,
    CONSTRAINT invitations_role_check CHECK (role IN ('viewer', 'member', 'admin', 'owner'))
);
CREATE INDEX invitations_organisation_idx ON invitations (organisation_id);
