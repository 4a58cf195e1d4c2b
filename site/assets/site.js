// The site's only script: the theme switch and the copy buttons. Every page is complete
// without it; the buttons it shows are hidden until it runs.
(() => {
  const root = document.documentElement;
  const stored = localStorage.getItem("theme");
  if (stored === "light" || stored === "dark") root.dataset.theme = stored;

  document.addEventListener("DOMContentLoaded", () => {
    const toggle = document.querySelector("[data-theme-toggle]");
    if (toggle) {
      toggle.hidden = false;
      toggle.addEventListener("click", () => {
        const dark = root.dataset.theme
          ? root.dataset.theme === "dark"
          : matchMedia("(prefers-color-scheme: dark)").matches;
        root.dataset.theme = dark ? "light" : "dark";
        localStorage.setItem("theme", root.dataset.theme);
      });
    }
    const flash = (button, text) => {
      const before = button.textContent;
      button.textContent = text;
      setTimeout(() => (button.textContent = before), 1500);
    };
    for (const pre of document.querySelectorAll("article pre")) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "copy";
      button.textContent = "Copy";
      button.addEventListener("click", async () => {
        await navigator.clipboard.writeText(pre.querySelector("code")?.innerText ?? pre.innerText);
        flash(button, "Copied");
      });
      pre.append(button);
    }
    for (const button of document.querySelectorAll("[data-copy-url]")) {
      button.hidden = false;
      button.addEventListener("click", async () => {
        const answer = await fetch(button.dataset.copyUrl);
        await navigator.clipboard.writeText(await answer.text());
        flash(button, "Copied");
      });
    }
  });
})();
