// ood-store serve: draws each page's Vega-Lite charts from the JSON script elements the server wrote, and
// submits a page's form when one of its choices changes. No inline script anywhere: the Content-Security-Policy
// allows this file and the vendored Vega bundle only. Vega runs with its expression interpreter (ast: true),
// not with generated functions, which the policy forbids.
"use strict";

const EMBED = {
  renderer: "svg",
  actions: false,
  ast: true,
  defaultStyle: false,
  tooltip: { disableDefaultStyle: true },
};

function draw(element) {
  const source = document.getElementById(element.dataset.spec);
  const spec = JSON.parse(source.textContent);
  return vegaEmbed(element, spec, EMBED)
    .then(() => {
      element.dataset.drawn = "true";
    })
    .catch((error) => {
      element.dataset.drawn = "failed";
      element.textContent = "Cannot draw this chart: " + error.message;
      console.error(error);
    });
}

document.addEventListener("DOMContentLoaded", () => {
  const charts = Array.from(document.querySelectorAll("div.vega[data-spec]"));
  Promise.all(charts.map(draw)).then(() => {
    document.body.dataset.charts = "drawn";
  });
  for (const select of document.querySelectorAll("form.controls select")) {
    select.addEventListener("change", () => select.form.submit());
  }
});
