/*
 * html.c: the report as one self-contained HTML page: the model as JSON,
 * Chart.js and its license notice, and a script that draws the model's
 * sections, all inline, so the page opens offline and fetches nothing.
 * Once every chart is drawn with data in each of its datasets, the script
 * writes "kforge-report-ok charts=N" into #kf-status; on a script error,
 * a console error or an empty chart it writes "kforge-report-error: ...".
 */
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

static const char style[] =
    "body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:"
    "1280px;color:#222;padding:0 1em}"
    "h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;"
    "padding-bottom:.2em;margin-top:1.6em}"
    "table{border-collapse:collapse;margin:.5em 0;font-size:.9em}"
    "td,th{border:1px solid #ddd;padding:.2em .6em;text-align:left;"
    "vertical-align:top}th{background:#f4f4f4}"
    ".charts{display:flex;flex-wrap:wrap;gap:1em}"
    "figure{margin:0;flex:1 1 560px;max-width:620px}"
    "figcaption{font-weight:600;margin-bottom:.3em}"
    ".plot{position:relative;height:300px}"
    ".note{font-size:.85em;color:#555}"
    "#kf-status{font-size:.8em;color:#777;margin-top:2em}"
    "pre{white-space:pre-wrap;font-size:.75em}";

/* Draws the model; Chart.js is loaded before it. */
static const char script[] =
    "(function () {\n"
    "  'use strict';\n"
    "  var problems = [];\n"
    "  function status() {\n"
    "    var s = document.getElementById('kf-status');\n"
    "    if (problems.length)\n"
    "      s.textContent = 'kforge-report-error: ' + problems.join('; ');\n"
    "  }\n"
    "  window.addEventListener('error', function (e) {\n"
    "    problems.push('script error: ' + e.message); status();\n"
    "  });\n"
    "  var consoleError = console.error;\n"
    "  console.error = function () {\n"
    "    problems.push('console error: ' +\n"
    "      Array.prototype.join.call(arguments, ' '));\n"
    "    status();\n"
    "    return consoleError.apply(console, arguments);\n"
    "  };\n"
    "  var palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728',\n"
    "    '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22',\n"
    "    '#17becf'];\n"
    "  function add(parent, tag, text, cls) {\n"
    "    var e = document.createElement(tag);\n"
    "    if (text !== undefined && text !== null) e.textContent = text;\n"
    "    if (cls) e.className = cls;\n"
    "    parent.appendChild(e);\n"
    "    return e;\n"
    "  }\n"
    "  function table(parent, t) {\n"
    "    var tb = add(parent, 'table'), tr = add(tb, 'tr');\n"
    "    t.columns.forEach(function (c) { add(tr, 'th', c); });\n"
    "    t.rows.forEach(function (r) {\n"
    "      var row = add(tb, 'tr');\n"
    "      r.forEach(function (c) { add(row, 'td', c); });\n"
    "    });\n"
    "  }\n"
    "  function drawn(v) {\n"
    "    if (v === null || v === undefined) return false;\n"
    "    if (typeof v === 'object' && !Array.isArray(v))\n"
    "      return v.y !== null && v.y !== undefined;\n"
    "    return true;\n"
    "  }\n"
    "  var model = JSON.parse(\n"
    "    document.getElementById('kf-model').textContent);\n"
    "  Chart.defaults.animation = false;\n"
    "  Chart.defaults.maintainAspectRatio = false;\n"
    "  var root = document.getElementById('kf-root'), charts = 0;\n"
    "  var want = 0;\n"
    "  add(root, 'h1', model.title);\n"
    "  model.sections.forEach(function (sec) {\n"
    "    var s = add(root, 'section');\n"
    "    s.id = sec.id;\n"
    "    add(s, 'h2', sec.title);\n"
    "    sec.tables.forEach(function (t) { table(s, t); });\n"
    "    sec.text.forEach(function (t) { add(s, 'p', t); });\n"
    "    var grid = add(s, 'div', null, 'charts');\n"
    "    sec.charts.forEach(function (c) {\n"
    "      want++;\n"
    "      var fig = add(grid, 'figure');\n"
    "      fig.id = c.id;\n"
    "      add(fig, 'figcaption', c.title);\n"
    "      var box = add(fig, 'div', null, 'plot');\n"
    "      var canvas = add(box, 'canvas');\n"
    "      if (c.note) add(fig, 'p', c.note, 'note');\n"
    "      var cfg = c.config, k = 0;\n"
    "      cfg.data.datasets.forEach(function (d) {\n"
    "        var col = palette[(d.kfEdge ? 7 : k++) % palette.length];\n"
    "        if (!d.borderColor) d.borderColor = col;\n"
    "        if (!d.backgroundColor)\n"
    "          d.backgroundColor = d.type === 'line' || cfg.type !==\n"
    "            'bar' ? col : col + '66';\n"
    "      });\n"
    "      cfg.options.plugins.legend = { labels: { filter:\n"
    "        function (item, data) {\n"
    "          return !data.datasets[item.datasetIndex].kfHideLegend;\n"
    "        } } };\n"
    "      var chart = new Chart(canvas, cfg);\n"
    "      var empty = chart.data.datasets.length === 0;\n"
    "      chart.data.datasets.forEach(function (d, i) {\n"
    "        var meta = chart.getDatasetMeta(i);\n"
    "        if (!d.data.some(drawn) || meta.data.length === 0)\n"
    "          empty = true;\n"
    "      });\n"
    "      if (empty) problems.push('chart ' + c.id + ' has no data');\n"
    "      else charts++;\n"
    "    });\n"
    "  });\n"
    "  var st = document.getElementById('kf-status');\n"
    "  if (!problems.length && charts === want)\n"
    "    st.textContent = 'kforge-report-ok charts=' + charts;\n"
    "  status();\n"
    "})();\n";

static void escape_html(struct kf_strbuf *sb, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			kf_strbuf_addstr(sb, "&lt;");
			break;
		case '>':
			kf_strbuf_addstr(sb, "&gt;");
			break;
		case '&':
			kf_strbuf_addstr(sb, "&amp;");
			break;
		case '"':
			kf_strbuf_addstr(sb, "&quot;");
			break;
		default:
			kf_strbuf_add(sb, s, 1);
		}
	}
}

/* JSON inside <script>: '<' only ever appears inside its strings, where
 * \u003c reads the same, so no "</script>" or "<!--" can end the block. */
static void add_json(struct kf_strbuf *sb, const char *json)
{
	for (const char *p = json; *p; p++) {
		if (*p == '<')
			kf_strbuf_addstr(sb, "\\u003c");
		else
			kf_strbuf_add(sb, p, 1);
	}
}

char *kf_report_chartjs_path(void)
{
	return kf_path_join(kf_exe_dir(), "share/chart.js/chart.min.js");
}

char *kf_report_chartjs_license_path(void)
{
	return kf_path_join(kf_exe_dir(), "share/chart.js/LICENSE");
}

char *kf_report_html(const cJSON *model, const char *chartjs,
		     const char *license)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	kf_strbuf_addstr(&sb, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
			      "<meta charset=\"utf-8\">\n<title>");
	escape_html(&sb, kf_json_str(model, "title"));
	kf_strbuf_addf(&sb,
		       "</title>\n<meta name=\"generator\" content=\"kforge "
		       "%s\">\n<style>%s</style>\n</head>\n<body>\n"
		       "<main id=\"kf-root\"></main>\n",
		       KF_VERSION, style);
	kf_strbuf_addstr(&sb, "<footer>\n<div id=\"kf-status\">"
			      "kforge-report-pending</div>\n"
			      "<details><summary>Charts drawn with Chart.js "
			      "(MIT license), embedded in this page"
			      "</summary>\n<pre>");
	escape_html(&sb, license);
	kf_strbuf_addstr(&sb, "</pre></details>\n</footer>\n"
			      "<script type=\"application/json\" "
			      "id=\"kf-model\">");
	char *json = kf_json_print(model);
	add_json(&sb, json);
	free(json);
	kf_strbuf_addstr(&sb, "</script>\n<script>\n");
	kf_strbuf_addstr(&sb, chartjs);
	kf_strbuf_addf(&sb,
		       "\n</script>\n<script>\n%s</script>\n"
		       "</body>\n</html>\n",
		       script);
	return kf_strbuf_detach(&sb);
}
