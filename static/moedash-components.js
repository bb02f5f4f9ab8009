/* moedash's own Dash component (namespace "moedash"), loaded by the page shell after
 * React and before the renderer starts (dashboard/app.py):
 *
 * StaticHtml: read-only markup rendered and escaped on the server
 * (dashboard/static_html.py), drawn as one element instead of one Dash component per
 * cell. Links marked data-nav navigate inside the app the way dcc.Link does: a plain
 * click pushes the URL and tells Dash's location component; a click with a modifier key
 * (new tab, new window) keeps the browser's own behaviour. */
(function () {
  "use strict";
  var React = window.React;

  function onClick(event) {
    if (event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    var anchor = event.target.closest ? event.target.closest("a[data-nav]") : null;
    if (!anchor || anchor.target) return;
    event.preventDefault();
    window.history.pushState({}, "", anchor.getAttribute("href"));
    window.dispatchEvent(new CustomEvent("_dashprivate_pushstate"));
    window.scrollTo(0, 0);
  }

  function StaticHtml(props) {
    var attrs = {
      id: props.id,
      className: props.className,
      onClick: onClick,
      dangerouslySetInnerHTML: { __html: props.html || "" },
    };
    Object.keys(props).forEach(function (key) {
      if (key.indexOf("data-") === 0 || key.indexOf("aria-") === 0) attrs[key] = props[key];
    });
    return React.createElement("div", attrs);
  }
  window.moedash = window.moedash || {};
  window.moedash.StaticHtml = StaticHtml;
})();
