/* moedash: accessible names and roles for Dash 4's own controls (loaded by the page
 * shell, dashboard/app.py). Dash renders
 *   - dcc.Dropdown as an aria-hidden but focusable <input> (a focus trampoline) before a
 *     <button tabindex=-1> named only by its current value;
 *   - dcc.RadioItems / dcc.Checklist as role=listbox with role=option <label>s that wrap
 *     native radio/checkbox inputs (interactive inside interactive, and no name);
 * and lets scrolled boxes (tables, trees) be unreachable by keyboard. This script fixes
 * the markup in place as Dash renders it: the dropdown button takes the Tab stop and is
 * named "<label>, <value>"; option lists become a named radiogroup/group of plain
 * labels (the native inputs carry the semantics); a box that scrolls becomes focusable.
 * Names come from the <label for=ID> each control already has. An opened dropdown's
 * search box takes the focus, so typing filters the list. The skip link moves the focus
 * to the page without a fragment navigation (see skipToPage). Nothing else changes. */
(function () {
  "use strict";

  function labelId(forId) {
    if (!forId) return null;
    var label = document.querySelector('label[for="' + CSS.escape(forId) + '"]');
    if (!label) return null;
    if (!label.id) label.id = forId + "--label";
    return label.id;
  }

  function fixDropdown(button) {
    var wrapper = button.parentElement;
    var trampoline = wrapper && wrapper.querySelector(":scope > .dash-dropdown-focus-target");
    if (trampoline && trampoline.getAttribute("tabindex") !== "-1") {
      trampoline.setAttribute("tabindex", "-1");
    }
    if (button.getAttribute("tabindex") !== "0" && !button.disabled) {
      button.setAttribute("tabindex", "0");
    }
    var lid = labelId(button.id);
    var named = button.getAttribute("aria-labelledby") || "";
    if (lid && named.split(" ").indexOf(lid) < 0 && !button.getAttribute("aria-label")) {
      button.setAttribute("aria-labelledby", (lid + " " + named).trim());
    }
  }

  // A click opens the dropdown's list with its search box unfocused, so typing (what
  // people do to filter a long list) went nowhere: the box takes the focus on open.
  function focusSearchOnOpen(button) {
    if (button.getAttribute("aria-expanded") !== "true") return;
    if (button.dataset.moedashOpen === "1") return; // focused once per opening
    button.dataset.moedashOpen = "1";
    var popup = document.querySelector(".dash-dropdown-content");
    var search = popup && popup.querySelector("input.dash-dropdown-search");
    if (search && document.activeElement !== search) search.focus();
  }

  function fixOptionList(list) {
    var radio = list.querySelector("input[type=radio]") !== null;
    var role = radio ? "radiogroup" : "group";
    if (list.getAttribute("role") !== role) list.setAttribute("role", role);
    var lid = labelId(list.id);
    if (lid && !list.getAttribute("aria-labelledby") && !list.getAttribute("aria-label")) {
      list.setAttribute("aria-labelledby", lid);
    }
    var options = list.querySelectorAll(".dash-options-list-option");
    for (var i = 0; i < options.length; i++) {
      if (options[i].hasAttribute("role")) options[i].removeAttribute("role");
      if (options[i].hasAttribute("aria-selected")) options[i].removeAttribute("aria-selected");
    }
  }

  function fixScrollBox(box) {
    if (box.hasAttribute("tabindex")) return; // already reachable: no need to measure
    var scrolls = box.scrollWidth > box.clientWidth + 1 || box.scrollHeight > box.clientHeight + 1;
    if (scrolls && !box.hasAttribute("tabindex")) box.setAttribute("tabindex", "0");
  }

  function fixAll() {
    var i;
    var buttons = document.querySelectorAll("button.dash-dropdown");
    for (i = 0; i < buttons.length; i++) {
      fixDropdown(buttons[i]);
      if (buttons[i].getAttribute("aria-expanded") !== "true") delete buttons[i].dataset.moedashOpen;
      else focusSearchOnOpen(buttons[i]);
    }
    var lists = document.querySelectorAll(".dash-options-list.dash-radioitems, .dash-options-list.dash-checklist");
    for (i = 0; i < lists.length; i++) fixOptionList(lists[i]);
    var boxes = document.querySelectorAll("#page .scroll-x, #page pre");
    for (i = 0; i < boxes.length; i++) fixScrollBox(boxes[i]);
  }

  var pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    // after React's commit, before the next paint
    window.requestAnimationFrame(function () {
      pending = false;
      fixAll();
    });
  }

  // A fragment navigation fires popstate: the shell's dcc.Location then reads the URL a
  // page's own Location wrote (those write without telling it) and the router drew the
  // whole page again, taking the focus the skip link had just moved. The link instead
  // focuses <main> and puts #page in the URL by replaceState (no popstate, no redraw).
  function skipToPage(event) {
    var link = event.target.closest && event.target.closest("a.skip-link");
    if (!link || event.button > 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    var id = (link.getAttribute("href") || "").replace(/^#/, "");
    var target = id && document.getElementById(id);
    if (!target) return;
    event.preventDefault();
    history.replaceState(history.state, "", "#" + id);
    target.focus({ preventScroll: true });
    target.scrollIntoView();
  }

  function start() {
    document.addEventListener("click", skipToPage);
    fixAll();
    new MutationObserver(schedule).observe(document.body, {
      childList: true,
      subtree: true,
      attributes: true,
      attributeFilter: ["role", "aria-selected", "tabindex", "aria-labelledby", "aria-expanded"],
    });
    window.addEventListener("resize", schedule);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
