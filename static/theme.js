// The colour theme, set before the page draws (so it never flashes the wrong one): light or dark
// as chosen with the button in the bar and remembered in this browser, or, on auto, as the system
// says (prefers-color-scheme), following it when it changes. The page always carries the theme it
// shows in `data-theme`, so the stylesheet names each palette once.
(() => {
  const THEMES = ["auto", "light", "dark"];
  const system = matchMedia("(prefers-color-scheme: light)");
  const stored = localStorage.getItem("sowpush-theme");
  let theme = THEMES.includes(stored) ? stored : "auto";
  const apply = () => {
    const shown = theme === "auto" ? (system.matches ? "light" : "dark") : theme;
    document.documentElement.dataset.theme = shown;
    const button = document.getElementById("theme");
    if (button) button.textContent = `theme: ${theme}`;
  };
  apply();
  system.addEventListener("change", apply);
  addEventListener("DOMContentLoaded", () => {
    apply();
    document.getElementById("theme")?.addEventListener("click", () => {
      theme = THEMES[(THEMES.indexOf(theme) + 1) % THEMES.length];
      localStorage.setItem("sowpush-theme", theme);
      apply();
    });
  });
})();
