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
    "article div.cell_output table, article div.cell_input pre");
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
  navigationMathsAsText();
  labelTableCells();
  fitResultTables();
  enlargeableFigures();
  nameFoldButtons();
  ledgerBackLinks();
});
window.addEventListener("load", function () {
  fitResultTables();
  markScrollBoxes();
  var fitted = function () { fitResultTables(); fitDisplayMaths(); markScrollBoxes(); };
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(fitted);
  }
  window.addEventListener("resize", function () { setTimeout(fitted, 250); });
});

// Result tables (attnbook.tables) and verdict tables: each value is labelled with its
// column's header (data-label, copied from the header row), and a table that is wider than
// its box, or has three columns or more in a box narrower than STACK_BELOW_PX (a phone), is
// stacked (.attn-stacked in book.css): one card per row, each value after its label. No
// column of numbers is ever out of sight; the table is re-fitted when the window changes.
var STACK_BELOW_PX = 560;
// a fold opened (a hidden cell's <details>, a dropdown): fit the tables it shows
document.addEventListener("toggle", function () { fitResultTables(); markScrollBoxes(); }, true);
document.addEventListener("click", function (event) {
  if (event.target.closest && event.target.closest(".toggle-button, .admonition-title")) {
    setTimeout(function () { fitResultTables(); markScrollBoxes(); }, 50);
  }
});
function fitResultTables() {
  document.querySelectorAll("article table.attn-result-table").forEach(function (table) {
    var headers = Array.from(table.querySelectorAll("thead th")).map(function (th) {
      return th.textContent.trim();
    });
    table.querySelectorAll("tbody tr").forEach(function (row) {
      Array.from(row.children).forEach(function (cell, i) {
        if (!cell.hasAttribute("data-label")) cell.setAttribute("data-label", headers[i] || "");
      });
    });
    var box = table.parentElement;
    if (!table.getClientRects().length || !box || !box.clientWidth) return;  // folded: later
    table.classList.remove("attn-stacked");
    var room = box.clientWidth;
    var wide = table.scrollWidth > table.clientWidth + 1 || table.offsetWidth > room + 1;
    if (wide || (room < STACK_BELOW_PX && headers.length >= 3)) {
      table.classList.add("attn-stacked");
    }
  });
}

// Fold buttons are named by what they open. myst-nb's hidden cells (<details> whose <summary>
// says "Toggle hidden content" to a screen reader) and sphinx-togglebutton's dropdowns (a
// button with that same name) take the visible title of their fold ("Imports and settings:
// show source", "Show: Solution"); a title used by several folds on the page gets the section
// it is in, and a number if that still repeats.
function nameFoldButtons() {
  var folds = [];
  document.querySelectorAll("article details > summary").forEach(function (summary) {
    var details = summary.parentElement;
    if (!summary.hasAttribute("aria-label")) return;   // named by its own text already
    folds.push({element: summary, watch: details, event: "toggle", title: function () {
      var shown = summary.querySelector(details.open ? ".expanded" : ".collapsed");
      return (shown || summary).textContent.replace(/\s+/g, " ").trim();
    }});
  });
  document.querySelectorAll("article button.toggle-button").forEach(function (button) {
    var target = document.getElementById(button.dataset.target);
    var heading = target && target.querySelector(".admonition-title");
    folds.push({element: button, watch: heading || button, event: "click", title: function () {
      var copy = heading ? heading.cloneNode(true) : null;
      if (copy) copy.querySelectorAll("button").forEach(function (b) { b.remove(); });
      var text = copy ? copy.textContent.replace(/\s+/g, " ").trim() : "hidden content";
      var hidden = target && target.classList.contains("toggle-hidden");
      return (hidden ? "Show: " : "Hide: ") + text;
    }});
  });
  var sectionOf = function (element) {
    var section = element.closest("section");
    var heading = section && section.querySelector(":scope > h1, :scope > h2, :scope > h3, " +
                                                   ":scope > h4, :scope > h5, :scope > h6");
    return heading ? heading.textContent.replace(/[#¶]/g, "").replace(/\s+/g, " ").trim() : "";
  };
  var base = function (fold) { return fold.title().replace(/^(Show|Hide): /, ""); };
  var count = {};
  folds.forEach(function (fold) { count[base(fold)] = (count[base(fold)] || 0) + 1; });
  var seen = {};
  folds.forEach(function (fold) {
    var suffix = "";
    if (count[base(fold)] > 1) {
      suffix = sectionOf(fold.element) ? ", in \u201c" + sectionOf(fold.element) + "\u201d" : "";
      var key = base(fold) + suffix;
      seen[key] = (seen[key] || 0) + 1;
      fold.key = key;
    }
    fold.suffix = suffix;
  });
  folds.forEach(function (fold) {
    if (fold.key && seen[fold.key] > 1) {
      seen[fold.key + "#"] = (seen[fold.key + "#"] || 0) + 1;
      fold.suffix += " (" + seen[fold.key + "#"] + " of " + seen[fold.key] + ")";
    }
    var name = function () { fold.element.setAttribute("aria-label", fold.title() + fold.suffix); };
    name();
    fold.watch.addEventListener(fold.event, function () { setTimeout(name, 0); });
  });
}

// Back to the ledger: book/ledger.json lists, for each claim, the sections (and figure) that
// print its verdict and show its evidence ("targets"). Under each of those on this page goes
// a line linking the claim's entry in the ledger, with its label and verdict.
function ledgerBackLinks() {
  var root = document.documentElement.dataset.content_root;
  if (root === undefined || typeof fetch === "undefined") return;
  var base = new URL(root, location.href);
  var here = decodeURIComponent(location.pathname.slice(base.pathname.length));
  if (!/^notebooks\//.test(here)) return;
  fetch(root + "book/ledger.json").then(function (response) {
    return response.ok ? response.json() : null;
  }).then(function (data) {
    if (!data) return;
    var byTarget = {};
    data.claims.forEach(function (claim) {
      (claim.targets || []).forEach(function (target) {
        var parts = target.split("#");
        if (parts[0] !== here || !parts[1]) return;
        (byTarget[parts[1]] = byTarget[parts[1]] || []).push(claim);
      });
    });
    Object.keys(byTarget).forEach(function (id) {
      var element = document.getElementById(id);
      if (!element) return;
      var line = document.createElement(element.tagName === "FIGURE" ? "span" : "p");
      line.className = "attn-ledger-back";
      line.append(byTarget[id].length > 1 ? "\u21a9 Ledger rows: " : "\u21a9 Ledger row: ");
      byTarget[id].forEach(function (claim, i) {
        if (i) line.append(" \u00b7 ");
        var link = document.createElement("a");
        link.href = root + "book/ledger.html#" + claim.anchor;
        var status = claim.verdict ? claim.verdict.status : "not yet tested";
        var words = (claim.title || claim.claim).split(/\s+/);
        var name = words.slice(0, 6).join(" ") + (words.length > 6 ? "\u2026" : "");
        link.textContent = claim.label + " " + name + ": " + status;
        link.title = claim.title || claim.claim;
        line.append(link);
      });
      if (element.tagName === "FIGURE") {
        var caption = element.querySelector("figcaption");
        if (caption) caption.append(line);
        return;
      }
      var heading = element.querySelector(":scope > h1, :scope > h2, :scope > h3, " +
                                          ":scope > h4, :scope > h5, :scope > h6");
      if (heading) heading.after(line);
    });
  }).catch(function () {});
}

// The search page (Sphinx's searchtools.js): chapters rank above the API reference (its two
// pages and its objects go last unless the query looks like code: a dot or an underscore), a
// result whose title holds the whole query first; the snippets come from the page's article
// (not its navigation), with the TeX of its maths shown as text.
if (typeof Scorer !== "undefined" && typeof Search !== "undefined") {
  Scorer.score = function (result) {
    var docname = result[0], title = (result[1] || "").toLowerCase(), score = result[4];
    var query = (new URLSearchParams(location.search).get("q") || "").toLowerCase().trim();
    var code = /[._]/.test(query);
    if (/^book\/api/.test(docname)) return code ? score : score - 1000;
    if (/^book\/glossary/.test(docname)) score -= 70;   // an index entry scores 100
    if (/^notebooks\//.test(docname)) score += 5;
    if (query && title.indexOf(query) >= 0) score += 20;
    return score;
  };
  Search.htmlToText = function (htmlString, anchor) {
    var page = new DOMParser().parseFromString(htmlString, "text/html");
    page.querySelectorAll(".headerlink, script, style, nav, .bd-sidebar-secondary, " +
                          ".prev-next-area, .bd-header-article, .attn-ledger-back")
      .forEach(function (element) { element.remove(); });
    page.querySelectorAll(".math, span.math, div.math").forEach(function (math) {
      math.textContent = texAsText(math.textContent);
    });
    var article = page.querySelector("article.bd-article") || page.querySelector("[role=main]");
    if (!article) return "";
    var part = anchor ? article.querySelector(anchor) : null;
    return (part || article).textContent;
  };
}

// TeX as readable text (search snippets): \(\hat\Sigma^{-1}\) -> "Σ̂^-1".
var TEX_SYMBOLS = {alpha: "\u03b1", beta: "\u03b2", gamma: "\u03b3", delta: "\u03b4",
  epsilon: "\u03b5", varepsilon: "\u03b5", zeta: "\u03b6", eta: "\u03b7", theta: "\u03b8",
  kappa: "\u03ba", lambda: "\u03bb", mu: "\u03bc", nu: "\u03bd", xi: "\u03be", pi: "\u03c0",
  rho: "\u03c1", sigma: "\u03c3", tau: "\u03c4", phi: "\u03c6", varphi: "\u03c6",
  chi: "\u03c7", psi: "\u03c8", omega: "\u03c9", Gamma: "\u0393", Delta: "\u0394",
  Theta: "\u0398", Lambda: "\u039b", Sigma: "\u03a3", Phi: "\u03a6", Psi: "\u03a8",
  Omega: "\u03a9", le: "\u2264", leq: "\u2264", ge: "\u2265", geq: "\u2265", ne: "\u2260",
  neq: "\u2260", approx: "\u2248", sim: "\u223c", to: "\u2192", rightarrow: "\u2192",
  infty: "\u221e", star: "\u22c6", ast: "*", cdot: "\u00b7", times: "\u00d7", top: "\u1d40",
  nabla: "\u2207", partial: "\u2202", sum: "\u03a3", int: "\u222b", in: "\u2208",
  mid: "|", pm: "\u00b1", ell: "\u2113", dots: "\u2026", ldots: "\u2026", cdots: "\u22ef",
  lVert: "\u2016", rVert: "\u2016", Vert: "\u2016", langle: "\u27e8", rangle: "\u27e9"};
var SUPERSCRIPTS = {"0": "\u2070", "1": "\u00b9", "2": "\u00b2", "3": "\u00b3", "4": "\u2074",
  "5": "\u2075", "6": "\u2076", "7": "\u2077", "8": "\u2078", "9": "\u2079", "-": "\u207b",
  "+": "\u207a", "*": "*", "\u22c6": "\u22c6", "\u1d40": "\u1d40"};
var SUBSCRIPTS = {"0": "\u2080", "1": "\u2081", "2": "\u2082", "3": "\u2083", "4": "\u2084",
  "5": "\u2085", "6": "\u2086", "7": "\u2087", "8": "\u2088", "9": "\u2089"};
function scripted(text, table, mark) {
  var all = Array.from(text).every(function (c) { return c in table; });
  return all ? Array.from(text).map(function (c) { return table[c]; }).join("") : mark + text;
}
function texAsText(tex) {
  var text = tex.replace(/^\s*(\\\(|\\\[|\$\$?)|(\\\)|\\\]|\$\$?)\s*$/g, "");
  text = text.replace(/\\(?:hat|widehat)\s*\\([A-Za-z]+)/g, function (_, name) {
    return (TEX_SYMBOLS[name] || name) + "\u0302"; });
  text = text.replace(/\\(?:hat|widehat)\s*\{\\([A-Za-z]+)\}/g, function (_, name) {
    return (TEX_SYMBOLS[name] || name) + "\u0302"; });
  text = text.replace(/\\(?:hat|widehat)\s*\{([^{}]*)\}|\\(?:hat|widehat)\s*([A-Za-z])/g,
                      function (_, group, single) { return (group || single) + "\u0302"; });
  text = text.replace(/\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "($1)/($2)");
  text = text.replace(/\\sqrt\s*\{([^{}]*)\}/g, "\u221a($1)");
  text = text.replace(/\\(?:mathrm|mathbf|mathcal|mathbb|text|operatorname|boldsymbol)\s*\{([^{}]*)\}/g, "$1");
  text = text.replace(/\\\|/g, "\u2016").replace(/\\[,;:! ]/g, " ").replace(/\\(left|right|big|Big|bigg|Bigg)\b/g, "");
  text = text.replace(/\\([A-Za-z]+)/g, function (_, name) { return TEX_SYMBOLS[name] || name; });
  text = text.replace(/\^\{([^{}]*)\}|\^(.)/g, function (_, group, single) {
    return scripted(group !== undefined ? group : single, SUPERSCRIPTS, "^"); });
  text = text.replace(/_\{([^{}]*)\}|_(.)/g, function (_, group, single) {
    return scripted(group !== undefined ? group : single, SUBSCRIPTS, "_"); });
  text = text.replace(/[{}]/g, "").replace(/\s+/g, " ");
  return text.trim();
}

// The search page's result titles come from the pages' titles, whose maths is TeX (\(W_Q\)):
// shown as text too.
if (typeof Search !== "undefined") {
  document.addEventListener("DOMContentLoaded", function () {
    var results = document.getElementById("search-results");
    if (!results || typeof MutationObserver === "undefined") return;
    new MutationObserver(function () {
      results.querySelectorAll("ul.search > li > a:not([data-attn-text])").forEach(function (a) {
        a.setAttribute("data-attn-text", "1");
        if (/\\\(|\\\[/.test(a.textContent)) {
          a.textContent = a.textContent.replace(/\\\((.*?)\\\)|\\\[(.*?)\\\]/g, function (_, i, d) {
            return texAsText(i || d); });
        }
      });
    }).observe(results, {childList: true, subtree: true});
  });
}

// A page without maths of its own loads no MathJax, but its navigation may still hold a
// title with maths (a chapter titled "Attention in $W_Q, W_K$ ..."): there its TeX is shown as
// text ("W_Q, W_K"), not as raw \( \) source.
function navigationMathsAsText() {
  if (window.MathJax) return;
  document.querySelectorAll(".math").forEach(function (math) {
    if (math.closest("article")) return;
    math.textContent = texAsText(math.textContent);
    math.classList.remove("math");
    math.classList.add("attn-math-text");
  });
}
