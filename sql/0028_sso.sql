-- Single sign-on (OpenID Connect). A person's identity at the provider (issuer and subject) is
-- remembered on their first sign-in, so an email changed at the provider later cannot sign in
-- as another account that has that email.
CREATE TABLE sso_identities (
    issuer      text NOT NULL,
    subject     text NOT NULL,
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX sso_identities_user_idx ON sso_identities (user_id);

-- A sign-in under way: its state's hash, the nonce and PKCE verifier it was started with, and
-- the hash of the cookie of the browser that started it. Taken (deleted) once, at the callback.
CREATE TABLE sso_attempts (
    state_hash    bytea PRIMARY KEY,
    browser_hash  bytea NOT NULL,
    nonce         text NOT NULL,
    code_verifier text NOT NULL,
    next_path     text NOT NULL,
    expires_at    timestamptz NOT NULL
);
CREATE INDEX sso_attempts_expiry_idx ON sso_attempts (expires_at);
