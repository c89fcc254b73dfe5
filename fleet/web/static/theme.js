// Runs before the page is drawn (not deferred), so a dark page never flashes light: applies the
// theme the user chose with the toggle ("light" or "dark"), kept in localStorage. Without a
// choice the stylesheet follows the system (prefers-color-scheme).
"use strict";
(() => {
  const chosen = localStorage.getItem("fleet-theme");
  if (chosen === "light" || chosen === "dark") document.documentElement.dataset.theme = chosen;
})();
