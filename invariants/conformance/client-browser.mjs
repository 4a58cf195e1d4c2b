// The person's browser, for the MCP conformance suite's client scenarios: `client-driver.sh`
// makes `$BROWSER` run `node client-browser.mjs <authorization url>`, as the hub opens a page.
//
// The suite's authorization servers log nobody in: their authorization endpoint answers at once
// with a redirect to the `redirect_uri` it was given, carrying `code` and `state`. This follows the
// redirects by hand until the Location is that `redirect_uri` (same origin and path; the loopback
// address the hub listens on), then GETs it, as a browser landing on the hub's page would, and
// exits. Every step is written to stdout (the driver keeps it in a log and prints it).
//
// It never follows a redirect elsewhere than the redirect_uri for more than a few hops, and never
// retries: what the hub asked for is exactly what the suite sees.

const MAX_HOPS = 10;
const TIMEOUT_MS = 10_000;

function log(line) {
  process.stdout.write(`[browser] ${line}\n`);
}

function sameEndpoint(a, b) {
  return a.origin === b.origin && a.pathname === b.pathname;
}

async function main() {
  const given = process.argv[2];
  if (!given) throw new Error('usage: client-browser.mjs <authorization url>');
  let url = new URL(given);
  const redirectParam = url.searchParams.get('redirect_uri');
  if (!redirectParam) throw new Error(`the authorization URL has no redirect_uri: ${given}`);
  const redirectUri = new URL(redirectParam);
  log(`open ${url}`);
  log(`redirect_uri ${redirectUri}`);

  for (let hop = 0; hop < MAX_HOPS; hop++) {
    const response = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS) });
    const location = response.headers.get('location');
    log(`GET ${url} -> ${response.status}${location ? ` Location: ${location}` : ''}`);
    if (response.status < 300 || response.status >= 400 || !location) {
      const body = await response.text().catch(() => '');
      throw new Error(`no redirect from ${url}: ${response.status} ${body.slice(0, 500)}`);
    }
    await response.arrayBuffer().catch(() => {});
    const next = new URL(location, url);
    if (sameEndpoint(next, redirectUri)) {
      const landed = await fetch(next, { redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS) });
      const body = await landed.text().catch(() => '');
      log(`GET ${next} -> ${landed.status} ${body.replace(/\s+/g, ' ').slice(0, 200)}`);
      if (landed.status >= 400) process.exitCode = 1;
      return;
    }
    url = next;
  }
  throw new Error(`more than ${MAX_HOPS} redirects without reaching ${redirectUri}`);
}

main().catch((error) => {
  log(`error: ${error?.stack ?? error}`);
  process.exitCode = 1;
});
