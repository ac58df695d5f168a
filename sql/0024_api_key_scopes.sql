-- An API key's scope: what it may do (app/http/permissions.py holds the table of which route
-- needs which). Every key made before scopes existed could do everything, so each becomes
-- `admin` and keeps working; from now on the code names the scope of every key it makes.
ALTER TABLE api_keys ADD COLUMN scope text NOT NULL DEFAULT 'admin'
    CONSTRAINT api_keys_scope_check CHECK (scope IN ('admin', 'ci', 'ingest', 'read'));
ALTER TABLE api_keys ALTER COLUMN scope DROP DEFAULT;
