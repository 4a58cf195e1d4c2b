// A $BROWSER stand-in: `browser.mjs <authorization-url>`.
//
// Follows redirects from the authorization URL with GETs, keeping cookies across hops, until a
// Location points at the request's redirect_uri (or, when it names none, at a loopback address
// off the authorization server's origin); then GETs that callback and writes its response body
// to stderr. A hosted hub's consent page on the way (HTTP 200 at /oauth/callback) is allowed.
//
// BROWSER_STANDIN_MODE (unset = normal):
//   deny         the callback gets error=access_denied&state=<same state> (and iss, if the AS sent one)
//   wrong-state  the callback's state is changed
//   wrong-iss    the callback's iss is http://evil.example
//   ignore       exit without visiting anything
// BROWSER_STANDIN_LOG: a file that gets one line per run, the URL this was given.

import { appendFileSync } from 'node:fs';

const MAX_HOPS = 20;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

const say = (...parts) => console.error('[browser-standin]', ...parts);

const start = process.argv[2];
const mode = process.env.BROWSER_STANDIN_MODE || 'normal';

if (process.env.BROWSER_STANDIN_LOG) {
  appendFileSync(process.env.BROWSER_STANDIN_LOG, `${start ?? ''}\n`);
}
if (!start) {
  say('usage: browser <url>');
  process.exit(2);
}
if (!['normal', 'deny', 'wrong-state', 'wrong-iss', 'ignore'].includes(mode)) {
  say(`unknown BROWSER_STANDIN_MODE ${mode}`);
  process.exit(2);
}
if (mode === 'ignore') {
  say('ignoring', start);
  process.exit(0);
}

// A small cookie jar: name+path -> value, sent where the path matches.
const jar = new Map();
function remember(response, url) {
  for (const line of response.headers.getSetCookie()) {
    const [pair, ...attrs] = line.split(';').map((s) => s.trim());
    const eq = pair.indexOf('=');
    const name = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    let path = '/';
    let gone = value === '';
    for (const attr of attrs) {
      const [k, v = ''] = attr.split('=');
      const key = k.toLowerCase();
      if (key === 'path') path = v || '/';
      if (key === 'max-age' && Number(v) <= 0) gone = true;
      if (key === 'expires' && Date.parse(v) <= Date.now()) gone = true;
    }
    const id = `${url.host} ${path} ${name}`;
    if (gone) jar.delete(id);
    else jar.set(id, { host: url.host, path, name, value });
  }
}
function cookieHeader(url) {
  const out = [];
  for (const c of jar.values()) {
    const inPath = url.pathname === c.path || url.pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`);
    if (c.host === url.host && inPath) out.push(`${c.name}=${c.value}`);
  }
  return out.join('; ');
}

function tamper(callback) {
  const q = callback.searchParams;
  switch (mode) {
    case 'deny': {
      const state = q.get('state');
      const iss = q.get('iss');
      callback.search = '';
      q.set('error', 'access_denied');
      if (state !== null) q.set('state', state);
      if (iss !== null) q.set('iss', iss);
      break;
    }
    case 'wrong-state':
      q.set('state', `${q.get('state') ?? ''}-tampered`);
      break;
    case 'wrong-iss':
      q.set('iss', 'http://evil.example');
      break;
    default:
  }
  return callback;
}

// The hub's consent page (a form POST to /oauth/consent with its sign-in and CSRF token):
// allowed, from the page's own origin. The URL the answer redirects to.
async function consent(url, html) {
  const field = (name) =>
    html.match(new RegExp(`name="${name}" value="([^"]*)"`))?.[1]?.replaceAll('&quot;', '"').replaceAll('&amp;', '&');
  const target = new URL('/oauth/consent', url);
  const body = new URLSearchParams({ signin: field('signin'), csrf: field('csrf'), decision: 'allow' });
  const cookie = cookieHeader(target);
  const response = await fetch(target, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: url.origin, ...(cookie ? { cookie } : {}) },
    body,
  });
  remember(response, target);
  const location = response.headers.get('location');
  if (response.status !== 303 || !location) throw new Error(`consent answered ${response.status}: ${await response.text()}`);
  say('consented at', url.origin);
  return new URL(location, target);
}

async function main() {
  let url = new URL(start);
  const asOrigin = url.origin;
  // Where the client waits: the request's redirect_uri when it names one, else any loopback
  // address off the authorization server's origin.
  const wanted = url.searchParams.get('redirect_uri');
  const isCallback = (next) => {
    if (wanted) {
      const back = new URL(wanted);
      return next.origin === back.origin && next.pathname === back.pathname;
    }
    return LOOPBACK.has(next.hostname) && next.origin !== asOrigin;
  };
  for (let hop = 0; hop < MAX_HOPS; hop += 1) {
    const cookie = cookieHeader(url);
    const response = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
    remember(response, url);
    const location = response.headers.get('location');
    let next;
    if (response.status === 200 && url.pathname === '/oauth/callback') {
      next = await consent(url, await response.text());
    } else if (response.status < 300 || response.status >= 400 || !location) {
      say(`stopped at ${url.href}: HTTP ${response.status}`);
      console.error(await response.text());
      return 1;
    } else {
      next = new URL(location, url);
    }
    if (isCallback(next)) {
      const callback = tamper(next);
      say(`callback ${callback.href}`);
      const answer = await fetch(callback, { redirect: 'manual' });
      console.error(await answer.text());
      return 0;
    }
    url = next;
  }
  say(`gave up after ${MAX_HOPS} redirects`);
  return 1;
}

main().then((code) => process.exit(code), (err) => {
  say('failed:', err.message, err.cause?.message ?? '');
  process.exit(1);
});
