// Package report renders what the stages produce for people and programs:
// aligned text tables, JSON, Markdown, and the self-contained HTML page of
// `cascade analyze` with its charts as inline SVG. It holds no analysis.
package report
