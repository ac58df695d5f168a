// oidc-provider for the SSO tests: node oidc_provider.mjs PORT CLIENT_ID SECRET REDIRECT_URI.
// Its development login and consent pages are used as they come (any password; the account id
// is typed). Test-only keys: every start makes new signing keys.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.cwd(), "node_modules", "x.js"));
const Provider = require("oidc-provider").default ?? require("oidc-provider");
const [port, clientId, clientSecret, redirectUri] = process.argv.slice(2);

const accounts = {
  alice: { email: "alice@allowed.example", email_verified: true },
  carol: { email: "carol@allowed.example", email_verified: false },
  bob: { email: "bob@elsewhere.example", email_verified: true },
};

const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: [redirectUri],
    grant_types: ["authorization_code"],
    response_types: ["code"],
    token_endpoint_auth_method: "client_secret_basic",
  }],
  // PKCE for every client, confidential ones too (S256 is the only method 9.x takes).
  pkce: { required: () => true },
  claims: { openid: ["sub"], email: ["email", "email_verified"] },
  // The ID token carries the email claims itself (no userinfo call).
  conformIdTokenClaims: false,
  cookies: { keys: ["cookie-key-for-tests-only"] },
  findAccount: async (_ctx, id) => {
    const account = accounts[id];
    if (!account) return undefined;
    return { accountId: id, claims: async () => ({ sub: id, ...account }) };
  },
});
provider.listen(Number(port), "127.0.0.1", () => console.log(`listening on ${port}`));
