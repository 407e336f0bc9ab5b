// Applies the stored theme before the first paint (no flash). A file of its own, not an inline script, so
// the console's Content-Security-Policy can allow only this origin's scripts.
try {
  var t = localStorage.getItem("mg-theme");
  if (t === "light" || t === "dark") document.documentElement.dataset.theme = t;
} catch {
  // storage blocked (private mode, policy): the default theme applies
}
