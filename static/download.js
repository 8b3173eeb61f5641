// A file the page makes, downloaded by the browser (a CSV export, a layout).

/** Download ``text`` as ``name``. @param {string} text @param {string} name @param {string} type */
export function download(text, name, type) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([text], { type }));
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}
