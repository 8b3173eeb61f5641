// How a view's menus close (static/panel.js): the ⋯ menu once one of its buttons did its work, on
// a click elsewhere, or on Escape (the keyboard back on its ⋯ when it was in the menu); a column's
// menu (static/column_menu.js) on a click outside it or on Escape.

/** @param {HTMLDetailsElement} more the ⋯ menu @param {HTMLElement} popup a column's menu */
export function closeMenusWhenDone(more, popup) {
  for (const button of more.querySelectorAll(".view-menu-items > button")) button.addEventListener("click", () => { more.open = false; });
  addEventListener("click", (event) => {
    const target = /** @type {Node} */ (event.target);
    if (!popup.hidden && !popup.contains(target)) popup.hidden = true;
    if (more.open && !more.contains(target)) more.open = false;
  });
  addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    if (!popup.hidden) popup.hidden = true;
    if (!more.open) return;
    const inside = more.contains(/** @type {Node} */ (event.target));
    more.open = false;
    if (inside) /** @type {HTMLElement} */ (more.querySelector("summary")).focus();
  });
}
