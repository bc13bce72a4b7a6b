package report

// pageHTML is the template of report.html. Its data is an *htmlPage; the
// charts are SVG elements drawn by this package (template.HTML).
const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="generator" content="cascade analyze">
<title>{{.Title}} (seed {{.Seed}})</title>
<style>
:root { --ink: #1d2330; --muted: #5b6475; --rule: #d9dde5; --pane: #f6f7f9; --accent: #1f4e99;
  --win: #1e7b34; --worse: #b3261e; --none: #5b6475; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; color: var(--ink); background: #ffffff;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", Arimo, Arial, sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 0 24px 48px; }
header.top { background: var(--pane); border-bottom: 1px solid var(--rule); margin-bottom: 8px; }
header.top > div { max-width: 1120px; margin: 0 auto; padding: 20px 24px 14px; }
h1 { font-size: 26px; margin: 0 0 4px; line-height: 1.25; }
h2 { font-size: 20px; margin: 36px 0 10px; padding-top: 8px; border-top: 1px solid var(--rule); }
h3 { font-size: 16px; margin: 22px 0 8px; }
p { margin: 6px 0 10px; }
.seed { color: var(--muted); margin: 0; }
.seed code { font-size: 15px; color: var(--ink); background: #ffffff; border: 1px solid var(--rule); padding: 1px 6px; border-radius: 4px; }
nav { font-size: 14px; margin-top: 10px; }
nav a { color: var(--accent); text-decoration: none; margin-right: 14px; white-space: nowrap; }
nav a:hover { text-decoration: underline; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "Liberation Mono", monospace; font-size: 13px; }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: 14px; }
th, td { border-bottom: 1px solid var(--rule); padding: 5px 10px 5px 0; text-align: left; vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: 13px; }
td.num, th.num { text-align: right; padding-right: 14px; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.kv th { width: 180px; color: var(--muted); font-weight: 500; }
table.wide { width: 100%; }
tr.inset td { background: #f1f7f2; }
.badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 12.5px; font-weight: 600; white-space: nowrap; }
.badge.win { background: #e3f3e6; color: var(--win); }
.badge.worse { background: #fbe7e5; color: var(--worse); }
.badge.none { background: #eceef2; color: var(--none); }
.badge.failed { background: #3a3f4b; color: #ffffff; }
.muted { color: var(--muted); }
p.lead { font-size: 16px; line-height: 1.55; margin: 18px 0 10px; max-width: 60em; }
ul.examples code { font-size: 12px; }
.note { color: var(--muted); font-style: italic; }
.callout { border-left: 4px solid var(--accent); background: var(--pane); padding: 10px 14px; margin: 12px 0; }
.callout.bad { border-left-color: var(--worse); }
.callout.good { border-left-color: var(--win); }
ul.tight { margin: 4px 0 10px; padding-left: 22px; }
ol.origins { margin: 4px 0 10px; padding-left: 26px; }
ol.origins li:first-child { font-weight: 600; color: var(--worse); }
figure { margin: 14px 0 22px; padding: 10px 12px 8px; border: 1px solid var(--rule); border-radius: 6px; background: #ffffff; }
figure svg { display: block; max-width: 100%; height: auto; margin: 0 auto; }
figcaption { font-size: 13px; color: var(--muted); margin-top: 6px; }
.figrow { display: flex; flex-wrap: wrap; gap: 14px; }
.figrow figure { flex: 1 1 320px; margin: 6px 0 14px; }
.scroll { overflow-x: auto; }
table.observed { font-size: 12.5px; }
table.observed th, table.observed td { padding: 4px 4px; }
table.observed th.num { white-space: normal; }
table.observed th.group { text-align: center; border-bottom: 1px solid var(--muted); }
table.observed td.node { white-space: nowrap; }
table.observed td.gap { color: var(--muted); padding-right: 12px; }
table.observed td.beyond { background: #fbe7e5; color: var(--worse); font-weight: 600; }
details { margin: 6px 0 12px; }
summary { cursor: pointer; color: var(--accent); }
footer { color: var(--muted); font-size: 13px; border-top: 1px solid var(--rule); margin-top: 40px; padding-top: 10px; }
@media print { nav { display: none; } h2 { break-after: avoid; } figure { break-inside: avoid; } }
</style>
</head>
<body>
<header class="top"><div>
<h1>{{.Title}}</h1>
<p class="seed">Seed <code>{{.Seed}}</code> — every replay in this report derives its randomness from it; the same inputs and seed give the same report.</p>
<nav>{{if .IncidentFirst}}<a href="#incident">Incident</a>{{end}}<a href="#summary">Summary</a><a href="#remediations">Remediations</a>{{if .Observed}}<a href="#observed">Model vs observed</a>{{end}}<a href="#graph">Call graph</a><a href="#timeline">Over time</a><a href="#capacity">Capacity</a><a href="#metastability">Metastability</a>{{if and .Incident (not .IncidentFirst)}}<a href="#incident">Incident</a>{{end}}{{if .Fit}}<a href="#fit">Fit</a>{{end}}</nav>
</div></header>
<main>
{{if or .Lead .Examples}}<section id="lead">
{{with .Lead}}<p class="lead">{{.}}</p>
{{end}}{{with .Examples}}<p class="muted">Traces to open by id (in Jaeger, for one):</p>
<ul class="tight examples">{{range .}}<li>{{.Label}}: {{range $i, $t := .Traces}}{{if $i}}, {{end}}<code>{{$t.ID}}</code> ({{$t.What}}){{else}}{{.Empty}}{{end}}</li>{{end}}</ul>
{{end}}</section>{{end}}
{{- if .IncidentFirst}}{{template "incident" .}}{{end}}

<section id="summary">
<h2>Summary</h2>
{{with .Inputs}}<p>Inputs: {{range $i, $in := .}}{{if $i}}, {{end}}<code>{{$in}}</code>{{end}}</p>{{end}}
<table class="kv">
{{range .Summary}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>
{{end}}</table>
{{with .Services}}<p class="muted">Services: {{range $i, $s := .}}{{if $i}}, {{end}}{{$s}}{{end}}</p>{{end}}
{{with .Notes}}<h3>Notes</h3>
<ul class="tight">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
</section>

<section id="remediations">
<h2>Ranked remediations</h2>
{{with .Rank}}
<p>Objective: {{.Objective}}. Every candidate and the baseline replayed seeds {{.Seeds}} ({{.Replay}}); Δ is candidate − baseline, paired seed by seed, averaged over the traffics, with its 95% interval, which covers {{.Covers}}. A change whose interval contains zero, or whose effect is within the baseline's seed-to-seed spread ({{.Noise}}), has no measurable effect and is not ranked.</p>
{{if .Fit}}<p{{if .OffFit}} class="callout bad"{{end}}>{{.Fit}}</p>{{end}}
<table>
<thead><tr><th>#</th><th>Traffic</th><th class="num">Success</th><th class="num">Goodput</th><th class="num">p99</th><th class="num">Amplification</th><th class="num">Collapsed</th></tr></thead>
<tbody>
{{range .Baselines}}<tr><td>{{.N}}</td><td>baseline under {{.Regime}}</td><td class="num">{{.Success}}</td><td class="num">{{.Goodput}}</td><td class="num">{{.P99}}</td><td class="num">{{.Amp}}</td><td class="num">{{.Collapse}}</td></tr>
{{end}}</tbody>
</table>
{{with .Set}}
<div class="callout {{if eq .Class "win"}}good{{end}}">
<strong>Best compatible set</strong> — <span class="badge {{.Class}}">{{.Verdict}}</span> Δ {{.Interval}}; cost: {{.Cost}}{{with .Recovs}}; recovers in {{.}}{{end}}.
<ul class="tight">{{range .Members}}<li>{{.}}</li>{{end}}</ul>
{{with .Why}}<p class="muted">Why: {{.}}</p>{{end}}
{{with .Tried}}<details><summary>Wins considered for the set</summary><ul class="tight">{{range .}}<li>{{.K}}: {{.V}}</li>{{end}}</ul></details>{{end}}
</div>
{{else}}
<div class="callout bad">No candidate won: there is no change to recommend from this ranking.</div>
{{end}}
<table class="wide">
<thead><tr><th>#</th><th>Change</th><th>Verdict</th><th class="num">Δ objective [95% CI]</th><th>Cost</th><th>Why</th></tr></thead>
<tbody>
{{range .Rows}}<tr{{if .InSet}} class="inset"{{end}}><td>{{.Rank}}</td><td title="{{.Name}}">{{.Description}}{{if .InSet}} <span class="muted">(in the set)</span>{{end}}</td><td><span class="badge {{.Class}}">{{.Verdict}}</span></td><td class="num">{{.Interval}}</td><td>{{.Cost}}</td><td>{{.Why}}</td></tr>
{{else}}<tr><td colspan="6" class="note">No candidate was ranked.</td></tr>
{{end}}</tbody>
</table>
{{else}}<p class="note">The ranking did not run.</p>
{{end}}
</section>

{{with .Observed}}
<section id="observed">
<h2>The model against what was observed</h2>
<p>{{.Intro}}</p>
<div class="scroll"><table class="observed" id="observed-nodes">
<thead><tr><th rowspan="2">Node</th>{{range .Columns}}<th class="group" colspan="2">{{.}}</th>{{end}}</tr>
<tr>{{range .Columns}}<th class="num">observed</th><th class="num">replayed (gap)</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr><td class="node">{{.Node}}{{if ne .Beyond "-"}} <span class="badge worse" title="beyond tolerance: {{.Beyond}}">⚠</span>{{end}}</td>{{range .Cells}}<td class="num">{{.Obs}}</td><td class="num gap{{if .Beyond}} beyond{{end}}">{{.RepGap}}</td>{{end}}</tr>
{{end}}</tbody>
</table></div>
{{with .Point}}<p>{{.}}</p>{{end}}
{{if .Charts}}<h3>Over time: the capture against the replay</h3>
<p>Requests {{.Window}}.</p>
{{range .Charts}}<figure>
{{.SVG}}
<figcaption>{{.Caption}}</figcaption>
</figure>
{{end}}{{with .Note}}<p class="note">{{.}}</p>{{end}}{{else}}<p class="note">{{.NoSeries}}</p>{{end}}
</section>
{{end}}

<section id="graph">
<h2>Call graph</h2>
{{with .Graph}}<figure>
{{.SVG}}
<figcaption>{{.Caption}}</figcaption>
</figure>
{{else}}<p class="note">{{.GraphNote}}</p>
{{end}}
{{range .Painted}}<figure>
{{.SVG}}
<figcaption>{{.Caption}}</figcaption>
</figure>
{{end}}
</section>

<section id="timeline">
<h2>Over time: the baseline against the best change</h2>
{{with .Timeline}}
<p>One replay each, seed {{.Seed}}, under {{.Regime}}, windows of {{.Window}}.
{{if .Change}}Change: {{.Change}}.{{else}}<strong>No change won</strong>, so the baseline is shown alone.{{end}}</p>
{{range .Charts}}<figure>
{{.SVG}}
<figcaption>{{.Caption}}</figcaption>
</figure>
{{end}}
{{with .QueueNote}}<p class="note">{{.}}</p>{{end}}
{{else}}<p class="note">{{.TimelineNote}}</p>
{{end}}
</section>

<section id="capacity">
<h2>Capacity</h2>
{{with .Capacity}}
<p>{{.Sweep}}.</p>
<table class="kv"><tr><th>knee</th><td>{{.Knee}}</td></tr><tr><th>collapse</th><td>{{.Collapse}}</td></tr></table>
<figure>
{{.Chart.SVG}}
<figcaption>{{.Chart.Caption}}</figcaption>
</figure>
<details><summary>The sweep, point by point</summary>
<table>
<thead><tr><th class="num">Load</th><th class="num">Offered/s</th><th class="num">Goodput/s [95% CI]</th><th class="num">Ratio</th><th class="num">Success</th><th class="num">p99 ms</th><th class="num">Ampl.</th><th class="num">Collapsed</th><th>Little: L vs λW (node)</th></tr></thead>
<tbody>
{{range .Points}}<tr>{{range $i, $c := .}}{{if eq $i 8}}<td>{{$c}}</td>{{else}}<td class="num">{{$c}}</td>{{end}}{{end}}</tr>
{{end}}</tbody>
</table>
</details>
{{else}}<p class="note">{{.CapacityNote}}</p>
{{end}}
</section>

<section id="metastability">
<h2>Metastability</h2>
{{with .Meta}}
<div class="callout {{if .Metastable}}bad{{else}}good{{end}}"><strong>{{.Verdict}}.</strong></div>
<table class="kv">
<tr><th>surge</th><td>{{.Regime}}</td></tr>
<tr><th>recovery</th><td>{{.Recovery}}</td></tr>
{{with .Removed}}<tr><th>removed by</th><td>{{.}}</td></tr>{{end}}
</table>
{{else}}<p class="note">There was no surge regime, so metastability was not checked.</p>
{{end}}
</section>

{{- if not .IncidentFirst}}{{template "incident" .}}{{end}}

{{with .Fit}}
<section id="fit">
<h2>Fit</h2>
<p>Best point: <code>{{.Best}}</code>, loss {{.BestLoss}}.</p>
<table class="kv">
{{range .Facts}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>
{{end}}</table>
{{with .Warnings}}<div class="callout bad"><strong>Warnings</strong><ul class="tight">{{range .}}<li>{{.}}</li>{{end}}</ul></div>{{end}}
{{with .Moved}}<h3>How far the fit moved</h3>
<table>
<thead><tr><th>Axis</th><th class="num">Model held</th><th>Source</th><th class="num">Best</th><th class="num">Δ</th><th class="num">Grid steps</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{index . 0}}</td><td class="num">{{index . 1}}</td><td>{{index . 2}}</td><td class="num">{{index . 3}}</td><td class="num">{{index . 4}}</td><td class="num">{{index . 5}}</td></tr>
{{end}}</tbody>
</table>{{end}}
{{with .Tiers}}<h3>Best point per tier</h3>
<table>
<thead><tr><th>Point</th><th class="num">Loss</th></tr></thead>
<tbody>
{{range .}}<tr><td><code>{{index . 0}}</code></td><td class="num">{{index . 1}}</td></tr>
{{end}}</tbody>
</table>{{end}}
{{with .Surface}}<h3>Loss surface</h3>
<table>
<thead><tr><th>Axis</th><th>Best</th><th>Flat range</th><th>Verdict</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td><td>{{index . 2}}</td><td>{{index . 3}}</td></tr>
{{end}}</tbody>
</table>{{end}}
{{if .Charts}}<div class="figrow">
{{range .Charts}}<figure>
{{.SVG}}
<figcaption>{{.Caption}}</figcaption>
</figure>
{{end}}</div>{{end}}
{{with .ChartNote}}<p class="note">{{.}}</p>{{end}}
{{with .Notes}}<h3>Notes</h3><ul class="tight">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
</section>
{{end}}

<footer>
Written by <code>cascade analyze</code>, report version {{.Version}}, seed {{.Seed}}.{{with .Files}} Files: {{range $i, $f := .}}{{if $i}}, {{end}}<code>{{$f}}</code>{{end}}.{{end}}
</footer>
</main>
</body>
</html>
{{define "incident"}}{{with .Incident}}
<section id="incident">
<h2>Incident: where it started</h2>
<p>Windows of {{.Window}} from {{.Range}}; each node's normal range is {{.Baseline}}.</p>
{{if .Origins}}<h3>Most likely origin</h3>
<ol class="origins">{{range .Origins}}<li>{{.}}</li>{{end}}</ol>
{{with .Confidence}}<p>Confidence: {{.}}.</p>{{end}}
{{with .Evidence}}<p>Evidence for the first:</p><ul class="tight">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{else}}<p class="callout">No node left its normal range: no origin.</p>{{end}}
{{with .Nodes}}<h3>Nodes that left their normal range</h3>
<table class="wide">
<thead><tr><th>Node</th><th>Left at</th><th>What changed</th><th class="num">Normal</th><th class="num">First window out</th><th class="num">Spreads out</th><th>Explained by</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td><td>{{index . 2}}</td><td class="num">{{index . 3}}</td><td class="num">{{index . 4}}</td><td class="num">{{index . 5}}</td><td>{{index . 6}}</td></tr>
{{end}}</tbody>
</table>{{end}}
{{with .Unjudged}}<details><summary>Nodes that could not be judged</summary><ul class="tight">{{range .}}<li>{{.K}}: {{.V}}</li>{{end}}</ul></details>{{end}}
{{if .Origins}}<h3>Path</h3>
{{with .Path}}<p>The degradation climbed from the origin towards the entry. Amplification is the calls on the edge per request of the caller, retries included, before the incident and during it.</p>
<table>
<thead><tr><th>Step (callee → caller)</th><th>Changed at</th><th class="num">Amplification</th><th class="num">Attempts per call</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td><td class="num">{{index . 2}}</td><td class="num">{{index . 3}}</td></tr>
{{end}}</tbody>
</table>
{{else}}<p class="note">No caller of the origin changed after it: the path has no step.</p>{{end}}{{end}}
{{with .Infectable}}<h3>Where a slowdown spreads</h3>
<p>Each node's service time +{{$.Incident.Slowdown}} in replay, seeds {{$.Incident.Seeds}}.</p>
<table>
<thead><tr><th>Node</th><th class="num">Others saturated</th><th class="num">Root p99 Δ</th><th class="num">Success Δ</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{index . 0}}</td><td class="num">{{index . 1}}</td><td class="num">{{index . 2}}</td><td class="num">{{index . 3}}</td></tr>
{{end}}</tbody>
</table>{{end}}
</section>
{{end}}
{{- end}}`
