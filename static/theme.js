// The colour theme, set before the page draws (so it never flashes the wrong one): as the system
// says (prefers-color-scheme), or light or dark as chosen with the button in the bar, remembered
// in this browser.
(() => {
  const THEMES = ["auto", "light", "dark"];
  const stored = localStorage.getItem("sowpush-theme");
  let theme = THEMES.includes(stored) ? stored : "auto";
  const apply = () => {
    if (theme === "auto") document.documentElement.removeAttribute("data-theme");
    else document.documentElement.dataset.theme = theme;
    const button = document.getElementById("theme");
    if (button) button.textContent = `theme: ${theme}`;
  };
  apply();
  addEventListener("DOMContentLoaded", () => {
    apply();
    document.getElementById("theme")?.addEventListener("click", () => {
      theme = THEMES[(THEMES.indexOf(theme) + 1) % THEMES.length];
      localStorage.setItem("sowpush-theme", theme);
      apply();
    });
  });
})();
