// Package drain mines log templates with the Drain online log parser (He,
// Zhu, Zheng and Lyu, "Drain: An Online Log Parsing Approach with Fixed
// Depth Tree", ICWS 2017).
//
// A Parser takes log messages one at a time and puts each in a cluster of
// messages that share a template: the message with its variable tokens
// replaced by "<*>". Messages are split into tokens at white space. A
// fixed-depth tree routes a message by its token count and then by its
// first tokens (a token holding a digit routes to the wildcard child, as
// does any token once a node has MaxChildren children); in the leaf it
// reaches, the message joins the cluster whose template shares the most
// tokens with it, position by position, if that share reaches
// SimThreshold, and the positions where they differ become "<*>".
// Otherwise it starts a cluster of its own.
//
// Cluster ids count from 1 in the order clusters are created, so the same
// messages in the same order give the same ids and templates. A Parser is
// not safe for concurrent use.
package drain
