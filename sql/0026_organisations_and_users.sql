-- Accounts, first slice: organisations own projects, users are their members, and a browser's
-- session can belong to a user. Every project there is moves into an organisation of its own,
-- named as it is, so no key, dataset or run changes hands.

CREATE TABLE organisations (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT organisations_name_key UNIQUE (name)
);

ALTER TABLE projects ADD COLUMN organisation_id uuid REFERENCES organisations (id) ON DELETE CASCADE;
-- Project names are unique, so each one names an organisation of its own.
INSERT INTO organisations (name, created_at) SELECT name, created_at FROM projects;
UPDATE projects p SET organisation_id = o.id FROM organisations o WHERE o.name = p.name;
ALTER TABLE projects ALTER COLUMN organisation_id SET NOT NULL;
-- A user's pages act on their organisation's first project.
CREATE INDEX projects_organisation_idx ON projects (organisation_id, created_at);

CREATE TABLE users (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    email          text NOT NULL,
    -- Argon2id, in its PHC string form; NULL until the user sets a password with their link.
    password_hash  text,
    created_at     timestamptz NOT NULL DEFAULT now()
);
-- One user per address, however it is capitalised.
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

-- Failed sign-ins counted per address, whether or not a user has it: an address nobody has
-- locks exactly as one somebody has, so a lockout tells nothing either.
CREATE TABLE sign_in_failures (
    email          text PRIMARY KEY,
    failures       integer NOT NULL,
    first_failed_at timestamptz NOT NULL,
    locked_until   timestamptz
);

CREATE TABLE memberships (
    user_id          uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    role             text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, organisation_id),
    CONSTRAINT memberships_role_check CHECK (role IN ('viewer', 'member', 'admin', 'owner'))
);
CREATE INDEX memberships_organisation_idx ON memberships (organisation_id);

-- A member's role narrowed or widened for one project (read by a later slice).
CREATE TABLE project_roles (
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    role        text NOT NULL,
    PRIMARY KEY (user_id, project_id),
    CONSTRAINT project_roles_role_check CHECK (role IN ('viewer', 'member', 'admin', 'owner'))
);
CREATE INDEX project_roles_project_idx ON project_roles (project_id);

-- The one-time link `agentlasso users create` prints: only the token's hash is kept.
CREATE TABLE password_tokens (
    token_hash  bytea PRIMARY KEY,
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz
);
CREATE INDEX password_tokens_user_idx ON password_tokens (user_id);

-- A session (or a sign-in link) of a user; NULL for one opened with a project key.
ALTER TABLE web_sessions ADD COLUMN user_id uuid REFERENCES users (id) ON DELETE CASCADE;
CREATE INDEX web_sessions_user_idx ON web_sessions (user_id) WHERE user_id IS NOT NULL;
ALTER TABLE login_tokens ADD COLUMN user_id uuid REFERENCES users (id) ON DELETE CASCADE;
