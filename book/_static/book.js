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

// Phones: a display equation wider than the column is set in a smaller font, down to
// MIN_DISPLAY_MATH_SCALE of MathJax's size, so that it fits and its number (moved under its
// end by book.css) stays with it; only a formula still too wide then scrolls in its box.
var MIN_DISPLAY_MATH_SCALE = 0.6;
function fitDisplayMaths() {
  document.querySelectorAll("article mjx-container[display='true']").forEach(function (math) {
    if (!math.dataset.attnFontSize) math.dataset.attnFontSize = math.style.fontSize || "100%";
    math.style.fontSize = math.dataset.attnFontSize;
    if (math.scrollWidth > math.clientWidth + 1) {
      var scale = Math.max(MIN_DISPLAY_MATH_SCALE, 0.98 * math.clientWidth / math.scrollWidth);
      math.style.fontSize = parseFloat(math.dataset.attnFontSize) * scale + "%";
    }
  });
}

// Boxes that scroll sideways (printed output, display maths, tables): their non-scrolling
// parent gets .attn-scroll-box, and .attn-scrolls while the box is wider than the column,
// which shows the scroll cue of book.css; .attn-scrolled-end hides it at the right end.
function markScrollBoxes() {
  var boxes = document.querySelectorAll(
    "article div.cell_output pre, article mjx-container[display='true'], " +
    "article div.cell_output table");
  boxes.forEach(function (box) {
    var holder = box.parentElement;
    if (!holder) return;
    holder.classList.add("attn-scroll-box");
    var update = function () {
      var scrolls = box.scrollWidth > box.clientWidth + 1;
      holder.classList.toggle("attn-scrolls", scrolls);
      holder.classList.toggle("attn-scrolled-end",
        scrolls && box.scrollLeft + box.clientWidth >= box.scrollWidth - 1);
    };
    if (!box.dataset.attnCue) {
      box.dataset.attnCue = "1";
      box.addEventListener("scroll", update, {passive: true});
    }
    update();
  });
}

// Phones: stacked table rows (book.css below 600 px) label every value with its column's
// header, copied from the table's header row into data-label.
function labelTableCells() {
  document.querySelectorAll("article .pst-scrollable-table-container > table").forEach(
    function (table) {
      var headers = Array.from(table.querySelectorAll("thead th")).map(function (th) {
        return th.textContent.trim();
      });
      if (!headers.length) return;
      table.querySelectorAll("tbody tr").forEach(function (row) {
        Array.from(row.children).forEach(function (cell, i) {
          if (headers[i] && !cell.hasAttribute("data-label")) {
            cell.setAttribute("data-label", headers[i]);
          }
        });
      });
    });
}

// Click or tap a figure: the enlarged view fits the figure to the window's width, as large
// as its full resolution allows (a 2x image at up to twice its size on the page) and, on a
// wide screen, no taller than the window; a tall figure on a phone scrolls vertically and a
// pinch zooms further. On a phone the figure's narrow rendering (panels stacked, 360 CSS px
// wide at 2x, served by book_html.py below 600 px) is the one shown, so its text keeps the
// size it was drawn at. Escape, the button or a click on the image closes it.
var FIGURE_PIXEL_RATIO = 2;   // attnbook.plotting.PIXEL_RATIO: image pixels per CSS pixel
function enlargeableFigures() {
  var dialog = document.createElement("dialog");
  dialog.className = "attn-enlarged";
  dialog.setAttribute("aria-label", "Enlarged figure");
  var close = document.createElement("button");
  close.type = "button";
  close.textContent = "\u00d7 Close";
  var image = document.createElement("img");
  dialog.append(close, image);
  document.body.appendChild(dialog);
  close.addEventListener("click", function () { dialog.close(); });
  image.addEventListener("click", function () { dialog.close(); });
  document.querySelectorAll("article div.cell_output img, article figure img, " +
                            "article .attn-slider img").forEach(function (img) {
    img.classList.add("attn-enlargeable");
    img.setAttribute("tabindex", "0");
    img.setAttribute("role", "button");
    var open = function (event) {
      event.preventDefault();   // Sphinx links a scaled image to its file: stay on the page
      var source = img.currentSrc || img.src;
      var natural = img.naturalWidth;
      var cssWidth = /\.narrow\.png$/.test(source) ? natural / FIGURE_PIXEL_RATIO
        : parseFloat(img.style.width) || parseFloat(img.getAttribute("width")) || natural;
      var room = document.documentElement.clientWidth - 8;   // a 4 px margin each side
      var roomHeight = window.innerHeight - 56;   // below the close button
      var fitHeight = roomHeight * natural / Math.max(img.naturalHeight, 1);
      image.src = source;
      image.alt = img.alt;
      image.style.width = Math.min(room, Math.max(cssWidth, Math.min(natural, fitHeight))) + "px";
      dialog.showModal();
    };
    img.addEventListener("click", open);
    img.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") open(event);
    });
  });
}

// Phones: the "on this page" drawer closes once the reader has picked a section, and the
// section then opens at the top of the screen. (Left to the browser, the jump happens while
// the modal drawer still holds the page, and the heading lands half a screen down.)
document.addEventListener("click", function (event) {
  var link = event.target.closest && event.target.closest("#pst-secondary-sidebar-modal a");
  var drawer = document.getElementById("pst-secondary-sidebar-modal");
  if (!link || !drawer || !drawer.open) return;
  drawer.close();
  var hash = link.getAttribute("href") || "";
  var target = hash.charAt(0) === "#" && document.getElementById(
    decodeURIComponent(hash.slice(1)));
  if (target) {
    event.preventDefault();
    history.pushState(null, "", hash);
    target.scrollIntoView({block: "start"});
  }
});

document.addEventListener("DOMContentLoaded", function () {
  labelTableCells();
  enlargeableFigures();
});
window.addEventListener("load", function () {
  markScrollBoxes();
  var fitted = function () { fitDisplayMaths(); markScrollBoxes(); };
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(fitted);
  }
  window.addEventListener("resize", function () { setTimeout(fitted, 250); });
});
