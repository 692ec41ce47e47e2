// Navigation fix for sphinx-book-theme 1.3 on pydata-sphinx-theme 0.17 (see book/_ext/book_html.py):
// both themes bind the sidebar toggles with document.querySelector, which finds a hidden
// duplicate button first. Forward clicks on every other (visible) toggle to that bound one,
// so the menu opens the drawer below 992 px and collapses the sidebar above.
document.addEventListener("DOMContentLoaded", function () {
  [".primary-toggle", ".secondary-toggle"].forEach(function (selector) {
    var buttons = document.querySelectorAll(selector);
    for (var i = 1; i < buttons.length; i++) {
      buttons[i].addEventListener("click", function (event) {
        event.preventDefault();
        event.stopImmediatePropagation();
        buttons[0].click();
      });
    }
  });
});

// Phones: MathJax 3 cannot break inline maths across lines, so a formula wider than the
// window gets its own horizontally scrolling box instead of running off the page.
function boxWideMaths() {
  var width = document.documentElement.clientWidth;
  document.querySelectorAll("mjx-container:not([display='true'])").forEach(function (math) {
    math.classList.remove("attn-wide-math");
    var content = math.firstElementChild;
    if (content && content.getBoundingClientRect().right > width) {
      math.classList.add("attn-wide-math");
    }
  });
}
window.addEventListener("load", function () {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(boxWideMaths);
  }
  var pending;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(boxWideMaths, 200);
  });
});
