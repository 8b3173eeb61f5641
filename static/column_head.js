// A column's header in a view's table: its title (a click, Enter or Space sorts on the server),
// its menu button (static/column_menu.js) and its quick filter box.

/** The header of a column: its title (sorts), its menu button and its quick filter.
 * @param {string} field @param {import("/static/grid.js").GridHost} host @returns {HTMLElement} */
export function columnHead(field, host) {
  const head = document.createElement("div");
  head.className = "head";
  head.dataset.field = field;
  const title = document.createElement("span");
  title.className = "title";
  title.tabIndex = 0;
  title.setAttribute("role", "button");
  title.title = `Sort by ${field} (the server sorts)`;
  title.textContent = field;
  title.addEventListener("click", () => host.sort(field));
  title.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" && event.key !== " ") return;
    event.preventDefault();
    host.sort(field);
  });
  const menu = document.createElement("button");
  menu.type = "button";
  menu.className = "column-menu-button";
  menu.title = `Menu of ${field}`;
  menu.setAttribute("aria-label", `Menu of ${field}`);
  menu.textContent = "⋮";
  menu.addEventListener("click", (event) => {
    event.stopPropagation();
    host.menu(field, menu);
  });
  const line = document.createElement("div");
  line.className = "head-line";
  line.append(title, menu);
  const input = document.createElement("input");
  input.className = "quick";
  input.size = 6; // its own width is small: the column's values decide the column's width
  input.placeholder = host.columns.kind(field) === "number" ? ">10, 5..9" : "contains";
  input.setAttribute("aria-label", `Quick filter on ${field}`);
  input.value = host.quickText(field);
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  const apply = () => { clearTimeout(timer); host.quick(field, input.value); };
  input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(apply, 400); });
  input.addEventListener("keydown", (event) => { if (event.key === "Enter") apply(); });
  input.addEventListener("mousedown", (event) => event.stopPropagation());
  head.append(line, input);
  return head;
}
