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

// Click or tap a figure: the enlarged view shows the image at its full resolution (a 2x
// image at up to twice its column width), never narrower than its natural CSS size, so its
// text is as large as drawn; the reader pans by scrolling. Escape, the button or a click
// on the image closes it.
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
      var natural = img.naturalWidth;
      var cssWidth = parseFloat(img.style.width) || parseFloat(img.getAttribute("width"))
        || natural;
      var room = document.documentElement.clientWidth - 16;
      image.src = img.currentSrc || img.src;
      image.alt = img.alt;
      image.style.width = Math.max(cssWidth, Math.min(natural, room)) + "px";
      dialog.showModal();
    };
    img.addEventListener("click", open);
    img.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") open(event);
    });
  });
}

// Phones: the "on this page" drawer closes once the reader has picked a section.
document.addEventListener("click", function (event) {
  var link = event.target.closest && event.target.closest("#pst-secondary-sidebar-modal a");
  if (link) {
    var drawer = document.getElementById("pst-secondary-sidebar-modal");
    if (drawer && drawer.open) drawer.close();
  }
});

document.addEventListener("DOMContentLoaded", function () {
  labelTableCells();
  enlargeableFigures();
});
window.addEventListener("load", function () {
  markScrollBoxes();
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(markScrollBoxes);
  }
  window.addEventListener("resize", function () { setTimeout(markScrollBoxes, 250); });
});
