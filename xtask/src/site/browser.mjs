// Headless Chromium with JavaScript off, through playwright-core, over the built site.
//
//   node browser.mjs <base URL> <screenshot dir> <paths JSON>
//
// Env: PLAYWRIGHT_CORE_DIR (node/node_modules/playwright-core), CHROMIUM (default
// /usr/bin/chromium). Opens each path, screenshots it in light and dark
// (<dir>/<name>-light.png, -dark.png) and prints, per page, what the Rust test checks:
// [{ path, status, title, h1, mainText, links: [href], ids: [id], alternate, colors }].

import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [base, dir, pathsJson] = process.argv.slice(2);
const core = process.env.PLAYWRIGHT_CORE_DIR;
if (!base || !dir || !pathsJson || !core) {
  console.error("usage: PLAYWRIGHT_CORE_DIR=… node browser.mjs <base URL> <dir> <paths JSON>");
  process.exit(2);
}
const { chromium } = await import(pathToFileURL(join(core, "index.mjs")).href);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const out = [];
try {
  const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  for (const path of JSON.parse(pathsJson)) {
    const response = await page.goto(new URL(path, base).href);
    const name = path === "/" ? "home" : path.slice(1).replaceAll("/", "-");
    const colors = {};
    for (const scheme of ["light", "dark"]) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.screenshot({ path: join(dir, `${name}-${scheme}.png`), fullPage: true });
      colors[scheme] = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    }
    await page.emulateMedia({ colorScheme: "light" });
    out.push({
      path,
      status: response ? response.status() : null,
      title: await page.title(),
      h1: await page.locator("h1").first().innerText(),
      mainText: (await page.locator("main").innerText()).length,
      links: await page.locator("a[href]").evaluateAll((as) => as.map((a) => a.getAttribute("href"))),
      ids: await page.locator("[id]").evaluateAll((es) => es.map((e) => e.id)),
      alternate: await page
        .locator('link[rel="alternate"][type="text/markdown"]')
        .evaluateAll((ls) => (ls.length ? ls[0].getAttribute("href") : null)),
      colors,
    });
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
