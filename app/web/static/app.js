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
// After htmx swaps the editor in, move focus to what the action produced: errors, a preview,
// or the check just added or the list a check was removed from (the server marks it).
const FOCUS_AFTER = new Set(["editor", "preview-slot"]);
document.addEventListener("htmx:afterSettle", (event) => {
  const id = event.detail.target?.id;
  if (!FOCUS_AFTER.has(id)) return;
  const region = document.getElementById(id);
  const shown = region?.querySelector(".alert[role=alert], #preview, [data-focus]");
  if (shown) { shown.setAttribute("tabindex", "-1"); shown.focus(); }
});
// A live check's message is updated in place (so screen readers announce it); its field is
// marked invalid while there is one.
document.addEventListener("htmx:afterSwap", (event) => {
  const message = event.detail.target;
  if (!(message instanceof Element) || !message.matches(".field-error[aria-live]")) return;
  const field = document.querySelector(`[aria-describedby~="${message.id}"]`);
  if (field) field.setAttribute("aria-invalid", message.textContent.trim() ? "true" : "false");
});
// A run's page while the run goes on: its summary follows the run over Server-Sent Events, and
// when the run ends the buttons and results are fetched again (no reload, nothing lost).
const liveSummary = document.querySelector("[data-live-url]");
if (liveSummary && window.EventSource) {
  const source = new EventSource(liveSummary.dataset.liveUrl);
  source.addEventListener("progress", (event) => { liveSummary.innerHTML = event.data; });
  source.addEventListener("final", async (event) => {
    source.close();
    liveSummary.innerHTML = event.data;
    liveSummary.removeAttribute("data-live-url");
    await refreshParts(["run-head", "results"]);
    const gate = document.querySelector("#run-head h1 .verdict");
    const announce = document.getElementById("run-announce");
    if (announce && gate) announce.textContent = `The run has ended: ${gate.textContent}.`;
  });
}
async function refreshParts(ids) {
  const answer = await fetch(window.location.href, { headers: { accept: "text/html" } });
  if (!answer.ok) return;
  const fresh = new DOMParser().parseFromString(await answer.text(), "text/html");
  for (const id of ids) {
    const now = document.getElementById(id);
    const next = fresh.getElementById(id);
    if (now && next) now.replaceWith(next);
  }
}
