// The site's Worker, in front of its static assets (wrangler.toml): a request for a page that
// prefers Markdown (`Accept: text/markdown`) gets the page's twin at the same URL; every page
// answer says `Vary: Accept`, so caches keep the two apart. Everything else is the asset as is.

const PAGE = /^\/([a-z0-9-]+(\/[a-z0-9-]+)*)?$/;

function wantsMarkdown(accept) {
  return /(^|,)\s*text\/markdown\s*(;|,|$)/i.test(accept ?? "");
}

function withVary(response) {
  const headers = new Headers(response.headers);
  headers.append("Vary", "Accept");
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const path = url.pathname.replace(/\/$/, "") || "/";
    if (!PAGE.test(path)) return env.ASSETS.fetch(request);
    if (wantsMarkdown(request.headers.get("Accept"))) {
      const twin = new URL(path === "/" ? "/index.md" : `${path}.md`, url);
      const answer = await env.ASSETS.fetch(new Request(twin, request));
      if (answer.ok) {
        const headers = new Headers(answer.headers);
        headers.set("Content-Type", "text/markdown; charset=utf-8");
        headers.append("Vary", "Accept");
        return new Response(answer.body, { status: 200, headers });
      }
    }
    return withVary(await env.ASSETS.fetch(request));
  },
};
