// OAuth test fixture: a real authorization server (oidc-provider) behind a tampering proxy, a
// real MCP server (TypeScript SDK) that accepts only access tokens the AS issued for it, and a
// tiny REST API with its OpenAPI 3.1 documents (oauth2 and openIdConnect) that does the same.
//
//   node oauth/server.mjs [--access-ttl <seconds>] [--refresh-ttl <seconds>] [--no-stdin-watch]
//
// Prints one JSON line on stdout ({"issuer", "mcp", "control", "api"}), logs to stderr, runs until killed
// or until stdin closes. See README.md next to this file.

import * as http from 'node:http';
import * as crypto from 'node:crypto';

// oidc-provider prints NOTICEs with console.info, which goes to stdout; stdout carries one line only.
console.log = (...args) => console.error(...args);
console.info = (...args) => console.error(...args);

const { default: Provider, errors: oidcErrors } = await import('oidc-provider');
const { default: express } = await import('express');
const { createRemoteJWKSet, jwtVerify, generateKeyPair, exportJWK } = await import('jose');
const { z } = await import('zod');
const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { requireBearerAuth } = await import('@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js');
const { metadataHandler } = await import('@modelcontextprotocol/sdk/server/auth/handlers/metadata.js');
const { getOAuthProtectedResourceMetadataUrl } = await import('@modelcontextprotocol/sdk/server/auth/router.js');
const { InvalidTokenError } = await import('@modelcontextprotocol/sdk/server/auth/errors.js');

// ---- arguments ------------------------------------------------------------------------------

const args = process.argv.slice(2);
function option(name, fallback) {
  const i = args.indexOf(name);
  if (i === -1) return fallback;
  const value = Number(args[i + 1]);
  if (!Number.isInteger(value) || value <= 0) {
    console.error(`${name} wants a positive whole number of seconds`);
    process.exit(2);
  }
  return value;
}
const ACCESS_TTL = option('--access-ttl', 5);
const REFRESH_TTL = option('--refresh-ttl', 30 * 24 * 60 * 60);
const WATCH_STDIN = !args.includes('--no-stdin-watch');

// Who logs in at the next login prompt; POST /__control {"user": "bob"} changes it.
let user = 'alice';
// Whether the next login prompt is refused (access_denied); POST /__control {"refuse": true}.
let refuseNext = false;
const SCOPE = 'mcp:tools';
const MODES = new Set([
  'normal', 'issuer-mismatch', 'no-s256', 'plain-http-public', 'token-wrong-type',
  'token-no-access-token', 'token-hang', 'token-huge', 'refresh-rotate-then-fail', 'always-401',
]);

const log = (...parts) => console.error('[oauth-fixture]', ...parts);

// ---- state ----------------------------------------------------------------------------------

let mode = 'normal';
let rotatedOnce = false; // for refresh-rotate-then-fail
const hanging = new Set(); // token-hang responses held open

const stats = {
  token_requests: { authorization_code: 0, refresh_token: 0, other: 0 },
  token_failures: 0,
  refresh_failures: 0,
  registrations: 0,
  authorizations: 0,
  mcp_requests: 0,
  mcp_401: 0,
  tool_calls: 0,
  api_requests: 0,
  api_401: 0,
  api_calls: 0,
  api_bearer_on_open: 0,
};

// ---- listeners first: every URL depends on every port -----------------------------------------

function listen(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server.address().port));
  });
}

const asServer = http.createServer((req, res) => asHandler(req, res));
const proxyServer = http.createServer((req, res) => proxyHandler(req, res));
const mcpServer = http.createServer((req, res) => mcpApp(req, res));
const apiServer = http.createServer((req, res) => apiApp(req, res));
const AS_PORT = await listen(asServer); // oidc-provider itself, reached only through the proxy
const PROXY_PORT = await listen(proxyServer); // the issuer the world sees
const MCP_PORT = await listen(mcpServer);
const API_PORT = await listen(apiServer);

const ISSUER = `http://127.0.0.1:${PROXY_PORT}`;
const AS_INTERNAL = `http://127.0.0.1:${AS_PORT}`;
const MCP_URL = `http://127.0.0.1:${MCP_PORT}/mcp`;
const CONTROL_URL = `http://127.0.0.1:${MCP_PORT}/__control`;
const PRM_URL = getOAuthProtectedResourceMetadataUrl(new URL(MCP_URL));
const API_ORIGIN = `http://127.0.0.1:${API_PORT}`;
const API_URL = `${API_ORIGIN}/v1`; // the API's base URL, and the resource its tokens are for
const API_SCOPES = ['api:read', 'api:write'];

// ---- storage: in memory, with a way to revoke everything ------------------------------------

const store = new Map(); // `${model}:${id}` -> { payload, expiresAt }
const now = () => Math.floor(Date.now() / 1000);

class Adapter {
  constructor(model) { this.model = model; }

  key(id) { return `${this.model}:${id}`; }

  get(key) {
    const entry = store.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt && entry.expiresAt <= Date.now()) {
      store.delete(key);
      return undefined;
    }
    return entry.payload;
  }

  async upsert(id, payload, expiresIn) {
    store.set(this.key(id), { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : 0 });
  }

  async find(id) { return this.get(this.key(id)); }

  async findByUid(uid) {
    for (const [key, { payload }] of store) {
      if (key.startsWith(`${this.model}:`) && payload.uid === uid) return this.get(key);
    }
    return undefined;
  }

  async findByUserCode(userCode) {
    for (const [key, { payload }] of store) {
      if (key.startsWith(`${this.model}:`) && payload.userCode === userCode) return this.get(key);
    }
    return undefined;
  }

  async consume(id) {
    const payload = this.get(this.key(id));
    if (payload) payload.consumed = now();
  }

  async destroy(id) { store.delete(this.key(id)); }

  async revokeByGrantId(grantId) {
    for (const [key, { payload }] of store) {
      if (key.startsWith(`${this.model}:`) && payload.grantId === grantId) store.delete(key);
    }
  }
}

const REVOCABLE = ['Grant', 'AccessToken', 'RefreshToken', 'AuthorizationCode', 'Session', 'Interaction'];
function revokeEverything() {
  let n = 0;
  for (const key of [...store.keys()]) {
    if (REVOCABLE.includes(key.slice(0, key.indexOf(':')))) {
      store.delete(key);
      n += 1;
    }
  }
  return n;
}

// ---- the authorization server ---------------------------------------------------------------

const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const signingKey = { ...(await exportJWK(privateKey)), kid: 'fixture-rs256', alg: 'RS256', use: 'sig' };

const provider = new Provider(ISSUER, {
  adapter: Adapter,
  jwks: { keys: [signingKey] },
  cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
  clientDefaults: {
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  },
  responseTypes: ['code'],
  scopes: ['openid', 'offline_access', SCOPE, ...API_SCOPES],
  claims: { openid: ['sub'] },
  pkce: { required: () => true }, // oidc-provider 9 knows only S256
  rotateRefreshToken: true,
  // Refresh tokens whenever the client registered the refresh_token grant, offline_access or not
  // (the default wants offline_access in the grant).
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
  expiresWithSession: async () => false,
  findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
  interactions: { url: async (ctx, interaction) => `/interaction/${interaction.uid}` },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true, initialAccessToken: false },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      getResourceServerInfo: async (ctx, resourceIndicator) => {
        if (resourceIndicator === API_URL) {
          return {
            scope: API_SCOPES.join(' '),
            audience: API_URL,
            accessTokenTTL: ACCESS_TTL,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        }
        if (resourceIndicator !== MCP_URL) throw new oidcErrors.InvalidTarget();
        return {
          scope: SCOPE,
          audience: MCP_URL,
          accessTokenTTL: ACCESS_TTL,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  ttl: {
    AccessToken: ACCESS_TTL,
    AuthorizationCode: 60,
    IdToken: 3600,
    RefreshToken: REFRESH_TTL,
    Grant: REFRESH_TTL,
    Session: REFRESH_TTL,
    Interaction: 600,
  },
  renderError: async (ctx, out) => {
    ctx.type = 'json';
    ctx.body = out;
  },
});

for (const event of ['server_error', 'authorization.error', 'grant.error', 'registration_create.error',
  'revocation.error', 'introspection.error']) {
  provider.on(event, (ctx, err) => log(event, err?.name, err?.message, err?.error_description ?? ''));
}
provider.on('grant.revoked', (ctx, grantId) => log('grant revoked', grantId));

const providerCallback = provider.callback();

// Login and consent need no person: alice logs in, and everything asked for is granted.
async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === 'login') {
    if (refuseNext) {
      refuseNext = false;
      await provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'the person refused' },
        { mergeWithLastSubmission: false });
      return;
    }
    await provider.interactionFinished(req, res, { login: { accountId: user } }, { mergeWithLastSubmission: false });
    return;
  }
  if (prompt.name === 'consent') {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const missing = prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    if (missing.missingResourceScopes) {
      for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes)) {
        grant.addResourceScope(indicator, scopes.join(' '));
      }
    }
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    return;
  }
  res.writeHead(501, { 'content-type': 'text/plain' }).end(`unknown prompt ${prompt.name}`);
}

function asHandler(req, res) {
  if (/^\/interaction\/[^/?]+(\?|$)/.test(req.url) && req.method === 'GET') {
    interaction(req, res).catch((err) => {
      log('interaction failed', err.name, err.message);
      if (!res.headersSent) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: err.error ?? 'invalid_request', error_description: err.error_description ?? err.message }));
      }
    });
    return;
  }
  providerCallback(req, res);
}

// ---- the tampering proxy in front of the AS -------------------------------------------------

const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'upgrade',
  'proxy-connection', 'te', 'trailer']);

function readBody(stream, limit = 1 << 20) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    stream.on('data', (c) => {
      size += c.length;
      if (size > limit) {
        reject(new Error('body too large'));
        stream.destroy();
      } else chunks.push(c);
    });
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

function forward(req, body) {
  return new Promise((resolve, reject) => {
    const headers = { ...req.headers };
    delete headers['transfer-encoding'];
    headers['content-length'] = String(body.length);
    const upstream = http.request({ host: '127.0.0.1', port: AS_PORT, method: req.method, path: req.url, headers }, async (r) => {
      try {
        resolve({ status: r.statusCode, headers: r.headers, body: await readBody(r, 8 << 20) });
      } catch (err) { reject(err); }
    });
    upstream.on('error', reject);
    upstream.end(body);
  });
}

function send(res, { status, headers, body }) {
  const out = {};
  for (const [k, v] of Object.entries(headers)) if (!HOP.has(k)) out[k] = v;
  out['content-length'] = String(body.length);
  res.writeHead(status, out);
  res.end(body);
}

function sendJson(res, status, value, extra = {}) {
  const body = Buffer.from(JSON.stringify(value));
  send(res, { status, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...extra }, body });
}

function rewriteJson(response, change) {
  if (response.status !== 200) return response;
  let doc;
  try { doc = JSON.parse(response.body.toString('utf8')); } catch { return response; }
  change(doc);
  return { ...response, body: Buffer.from(JSON.stringify(doc)) };
}

const METADATA_PATHS = new Set(['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']);

function tamperMetadata(doc) {
  switch (mode) {
    case 'issuer-mismatch':
      doc.issuer = 'http://evil.example';
      break;
    case 'no-s256':
      doc.code_challenge_methods_supported = ['plain'];
      break;
    case 'plain-http-public':
      for (const [k, v] of Object.entries(doc)) {
        if (k !== 'issuer' && typeof v === 'string' && v.startsWith(ISSUER)) {
          doc[k] = `http://as.example.com${v.slice(ISSUER.length)}`;
        }
      }
      break;
    default:
  }
}

function hugeBody(res) {
  // 10 MB, chunked (no content-length), starting like a real token response.
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.write('{"token_type":"Bearer","expires_in":60,"access_token":"');
  const chunk = Buffer.alloc(64 * 1024, 'A');
  let left = 10 * 1024 * 1024;
  const pump = () => {
    while (left > 0) {
      const n = Math.min(left, chunk.length);
      left -= n;
      if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
        res.once('drain', pump);
        return;
      }
    }
    res.end('"}');
  };
  res.on('error', () => {});
  pump();
}

async function tokenEndpoint(req, res, body) {
  const grantType = new URLSearchParams(body.toString('utf8')).get('grant_type');
  const kind = grantType === 'authorization_code' || grantType === 'refresh_token' ? grantType : 'other';
  stats.token_requests[kind] += 1;
  const fail = () => {
    stats.token_failures += 1;
    if (kind === 'refresh_token') stats.refresh_failures += 1;
  };

  if (mode === 'token-hang') {
    hanging.add(res);
    res.on('close', () => hanging.delete(res));
    log('token-hang: holding a token request open');
    return;
  }
  if (mode === 'token-huge') {
    hugeBody(res);
    return;
  }
  if (mode === 'refresh-rotate-then-fail' && kind === 'refresh_token' && rotatedOnce) {
    fail();
    sendJson(res, 400, { error: 'invalid_grant', error_description: 'grant request is invalid' });
    return;
  }

  let response = await forward(req, body);
  if (response.status !== 200) {
    fail();
    log('token endpoint', response.status, response.body.toString('utf8'));
  } else if (mode === 'refresh-rotate-then-fail' && kind === 'refresh_token') {
    rotatedOnce = true;
  }
  if (mode === 'token-wrong-type') response = rewriteJson(response, (doc) => { doc.token_type = 'mac'; });
  if (mode === 'token-no-access-token') response = rewriteJson(response, (doc) => { delete doc.access_token; });
  send(res, response);
}

async function proxyHandler(req, res) {
  try {
    const path = req.url.split('?')[0];
    const body = await readBody(req);
    if (req.method === 'POST' && path === '/token') {
      await tokenEndpoint(req, res, body);
      return;
    }
    if (req.method === 'GET' && path === '/auth') stats.authorizations += 1;
    let response = await forward(req, body);
    if (req.method === 'POST' && path === '/reg' && response.status === 201) stats.registrations += 1;
    if (METADATA_PATHS.has(path)) response = rewriteJson(response, tamperMetadata);
    send(res, response);
  } catch (err) {
    log('proxy error', err.message);
    if (!res.headersSent) sendJson(res, 502, { error: 'server_error', error_description: 'fixture proxy failed' });
    else res.destroy();
  }
}

// ---- the MCP server -------------------------------------------------------------------------

const jwks = createRemoteJWKSet(new URL(`${AS_INTERNAL}/jwks`));

const verifier = {
  async verifyAccessToken(token) {
    let payload;
    try {
      ({ payload } = await jwtVerify(token, jwks, {
        issuer: ISSUER,
        audience: MCP_URL,
        typ: 'at+jwt',
        algorithms: ['RS256'],
        requiredClaims: ['exp', 'sub', 'client_id'],
      }));
    } catch (err) {
      throw new InvalidTokenError(err.code === 'ERR_JWT_EXPIRED' ? 'Token has expired' : `Invalid access token (${err.code ?? err.message})`);
    }
    return {
      token,
      clientId: payload.client_id,
      scopes: typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [],
      expiresAt: payload.exp,
      resource: new URL(Array.isArray(payload.aud) ? payload.aud[0] : payload.aud),
      extra: { sub: payload.sub },
    };
  },
};

const bearer = requireBearerAuth({
  verifier,
  requiredScopes: [SCOPE],
  resourceMetadataUrl: PRM_URL,
  expectedResource: new URL(MCP_URL),
});

function buildMcpServer() {
  const server = new McpServer({ name: 'oauth-fixture', version: '1.0.0' });
  server.registerTool('whoami', {
    description: 'Says who the access token belongs to and how many tool calls the fixture has answered.',
    inputSchema: {},
    annotations: { readOnlyHint: true },
  }, async (_args, extra) => {
    stats.tool_calls += 1;
    const sub = extra.authInfo?.extra?.sub ?? 'unknown';
    return { content: [{ type: 'text', text: `sub=${sub} calls=${stats.tool_calls}` }] };
  });
  server.registerTool('add', {
    description: 'Adds two numbers.',
    inputSchema: { a: z.number(), b: z.number() },
    annotations: { readOnlyHint: true },
  }, async ({ a, b }) => {
    stats.tool_calls += 1;
    return { content: [{ type: 'text', text: String(a + b) }] };
  });
  return server;
}

const mcpApp = express();
mcpApp.disable('x-powered-by');

mcpApp.get('/__stats', (req, res) => res.json({ mode, ...stats }));
mcpApp.post('/__control', express.json(), (req, res) => {
  const body = req.body ?? {};
  const out = { ok: true };
  if (body.revokeApiAccess === true || body.revoke === true) {
    // The API's access tokens seen so far stop working; the grants and refresh tokens stay,
    // unless everything is revoked too.
    for (const jti of seenApiTokens) revokedApiTokens.add(jti);
    out.revokedApiAccess = revokedApiTokens.size;
  }
  if (body.revoke === true) {
    out.revoked = revokeEverything();
    log('revoked every grant and token', out.revoked);
  }
  if (body.refuse === true) refuseNext = true;
  if (typeof body.user === 'string' && /^[a-z0-9-]{1,32}$/.test(body.user)) {
    user = body.user;
    log('user', user);
  }
  if (body.mode !== undefined) {
    if (!MODES.has(body.mode)) {
      res.status(400).json({ ok: false, error: `unknown mode ${JSON.stringify(body.mode)}`, modes: [...MODES] });
      return;
    }
    mode = body.mode;
    rotatedOnce = false;
    if (mode !== 'token-hang') for (const r of hanging) r.destroy();
    log('mode', mode);
  }
  out.mode = mode;
  out.user = user;
  res.json(out);
});

mcpApp.use('/.well-known/oauth-protected-resource/mcp', metadataHandler({
  resource: MCP_URL,
  authorization_servers: [ISSUER],
  scopes_supported: [SCOPE],
  bearer_methods_supported: ['header'],
  resource_name: 'capabilities OAuth test fixture',
}));

mcpApp.all('/mcp', (req, res, next) => {
  stats.mcp_requests += 1;
  res.on('finish', () => { if (res.statusCode === 401) stats.mcp_401 += 1; });
  if (mode === 'always-401') {
    res.set('WWW-Authenticate', `Bearer error="invalid_token", error_description="always-401 mode", scope="${SCOPE}", resource_metadata="${PRM_URL}"`);
    res.status(401).json({ error: 'invalid_token', error_description: 'always-401 mode' });
    return;
  }
  next();
}, bearer, express.json(), async (req, res) => {
  if (req.method !== 'POST') {
    res.set('Allow', 'POST').status(405).json({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed (stateless server)' }, id: null });
    return;
  }
  const server = buildMcpServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => { transport.close(); server.close(); });
  try {
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  } catch (err) {
    log('mcp error', err.message);
    if (!res.headersSent) res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null });
  }
});


// ---- the REST API and its OpenAPI documents -------------------------------------------------

const seenApiTokens = new Set(); // jti of every API token presented
const revokedApiTokens = new Set(); // … of those presented before a revoke: refused from then on

function apiDocument(securitySchemes) {
  return {
    openapi: '3.1.0',
    info: { title: 'Fixture Notes API', version: '1.0.0', description: 'A tiny API behind the OAuth fixture.' },
    servers: [{ url: API_URL }],
    security: [{ oauth: ['api:read'] }],
    paths: {
      '/me': {
        get: {
          operationId: 'whoami',
          summary: 'Who the access token belongs to, and how many API calls the fixture has answered.',
          responses: {
            200: {
              description: 'the caller',
              content: { 'application/json': { schema: { type: 'object', properties: { sub: { type: 'string' }, calls: { type: 'integer' } } } } },
            },
          },
        },
      },
      '/notes': {
        post: {
          operationId: 'addNote',
          summary: 'Adds a note.',
          security: [{ oauth: ['api:read', 'api:write'] }],
          requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } } } },
          responses: { 201: { description: 'added' } },
        },
      },
      '/health': {
        get: {
          operationId: 'health',
          summary: 'Whether the API is up (no credential).',
          security: [],
          responses: { 200: { description: 'up', content: { 'application/json': { schema: { type: 'object' } } } } },
        },
      },
    },
    components: { securitySchemes },
  };
}

const codeFlow = (extra = {}) => ({
  authorizationUrl: `${ISSUER}/auth`,
  tokenUrl: `${ISSUER}/token`,
  scopes: { 'api:read': 'Read notes', 'api:write': 'Write notes' },
  ...extra,
});

const DOCUMENTS = {
  // oauth2, authorization code flow, at the fixture's authorization server.
  'openapi.json': () => apiDocument({ oauth: { type: 'oauth2', flows: { authorizationCode: codeFlow() } } }),
  // OpenID Connect discovery.
  'openapi-oidc.json': () => apiDocument({
    oauth: { type: 'openIdConnect', openIdConnectUrl: `${ISSUER}/.well-known/openid-configuration` },
  }),
  // Both a key and oauth2: the key stays the default.
  'openapi-key-and-oauth.json': () => apiDocument({
    key: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
    oauth: { type: 'oauth2', flows: { authorizationCode: codeFlow() } },
  }),
  // Bad input: only implicit and password flows.
  'openapi-implicit.json': () => apiDocument({
    oauth: {
      type: 'oauth2',
      flows: {
        implicit: { authorizationUrl: `${ISSUER}/auth`, scopes: { 'api:read': 'Read' } },
        password: { tokenUrl: `${ISSUER}/token`, scopes: { 'api:read': 'Read' } },
      },
    },
  }),
  // Bad input: a token URL on plain http to another machine.
  'openapi-http-token.json': () => apiDocument({
    oauth: { type: 'oauth2', flows: { authorizationCode: codeFlow({ tokenUrl: 'http://as.example.com/token' }) } },
  }),
  // An authorization server the document names by endpoints its metadata does not list (a query
  // on each), so the hub learns of no registration endpoint: it needs `--client-id`.
  'openapi-unregistered.json': () => apiDocument({
    oauth: {
      type: 'oauth2',
      flows: { authorizationCode: codeFlow({ authorizationUrl: `${ISSUER}/auth?via=doc`, tokenUrl: `${ISSUER}/token?via=doc` }) },
    },
  }),
  // Bad input: discovery at this API's origin, answered with the real server's metadata, whose
  // issuer is not the one that URL names.
  'openapi-wrong-issuer.json': () => apiDocument({
    oauth: { type: 'openIdConnect', openIdConnectUrl: `${API_ORIGIN}/idp/.well-known/openid-configuration` },
  }),
};

async function verifyApiToken(req) {
  const header = req.headers.authorization ?? '';
  const match = /^Bearer (.+)$/.exec(header);
  if (!match) return { error: 'no bearer token' };
  let payload;
  try {
    ({ payload } = await jwtVerify(match[1], jwks, {
      issuer: ISSUER,
      audience: API_URL,
      typ: 'at+jwt',
      algorithms: ['RS256'],
      requiredClaims: ['exp', 'sub', 'client_id', 'jti'],
    }));
  } catch (err) {
    return { error: err.code === 'ERR_JWT_EXPIRED' ? 'the token has expired' : `invalid token (${err.code ?? err.message})` };
  }
  if (revokedApiTokens.has(payload.jti)) return { error: 'the token was revoked' };
  seenApiTokens.add(payload.jti);
  return { payload, scopes: typeof payload.scope === 'string' ? payload.scope.split(' ') : [] };
}

const apiApp = express();
apiApp.disable('x-powered-by');
apiApp.use((req, res, next) => {
  stats.api_requests += 1;
  res.on('finish', () => { if (res.statusCode === 401) stats.api_401 += 1; });
  next();
});
apiApp.get('/v1/:name', (req, res, next) => {
  const document = DOCUMENTS[req.params.name];
  if (!document) { next(); return; }
  res.json(document());
});
apiApp.get('/idp/.well-known/openid-configuration', async (req, res) => {
  const response = await fetch(`${AS_INTERNAL}/.well-known/openid-configuration`);
  res.status(response.status).type('json').send(await response.text());
});
apiApp.get('/v1/health', (req, res) => {
  if (req.headers.authorization) stats.api_bearer_on_open += 1;
  res.json({ up: true });
});
const needs = (scope) => async (req, res, next) => {
  const checked = await verifyApiToken(req);
  if (checked.error) {
    res.set('WWW-Authenticate', `Bearer error="invalid_token", error_description="${checked.error}"`);
    res.status(401).json({ error: 'invalid_token', error_description: checked.error });
    return;
  }
  if (!checked.scopes.includes(scope)) {
    res.set('WWW-Authenticate', `Bearer error="insufficient_scope", scope="${scope}"`);
    res.status(403).json({ error: 'insufficient_scope' });
    return;
  }
  req.sub = checked.payload.sub;
  next();
};
apiApp.get('/v1/me', needs('api:read'), (req, res) => {
  stats.api_calls += 1;
  res.json({ sub: req.sub, calls: stats.api_calls });
});
apiApp.post('/v1/notes', needs('api:write'), express.json(), (req, res) => {
  stats.api_calls += 1;
  res.status(201).json({ added: String(req.body?.text ?? ''), by: req.sub });
});

// ---- ready ----------------------------------------------------------------------------------

process.stdout.write(`${JSON.stringify({ issuer: ISSUER, mcp: MCP_URL, control: CONTROL_URL, api: API_URL })}\n`);
log(`issuer ${ISSUER} (oidc-provider at ${AS_INTERNAL}), mcp ${MCP_URL}, api ${API_URL}, access ttl ${ACCESS_TTL}s`);

const shutdown = (why) => {
  log('exiting:', why);
  process.exit(0);
};
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
if (WATCH_STDIN) {
  process.stdin.on('end', () => shutdown('stdin closed'));
  process.stdin.on('error', () => shutdown('stdin error'));
  process.stdin.resume();
}
