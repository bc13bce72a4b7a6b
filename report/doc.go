// Package report renders what the stages produce for people and programs:
// aligned text tables, JSON and Markdown. It holds no analysis.
package report
