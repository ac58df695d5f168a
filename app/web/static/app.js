// Small touches that need JavaScript; every page works without it.
document.addEventListener("click", (event) => {
  const button = event.target.closest("button.copy[data-copy]");
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  if (!field) return;
  field.select();
  navigator.clipboard?.writeText(field.value).then(
    () => { button.textContent = "Copied"; },
    () => { button.textContent = "Press Ctrl+C to copy"; },
  );
});
// After htmx swaps the editor in, move focus to what the action produced (errors or a preview).
document.addEventListener("htmx:afterSettle", (event) => {
  const target = event.detail.elt;
  if (!(target instanceof Element)) return;
  const shown = target.querySelector("#preview, .alert[role=alert]");
  if (shown) { shown.setAttribute("tabindex", "-1"); shown.focus(); }
});
