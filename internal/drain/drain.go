package drain

import (
	"errors"
	"fmt"
	"strings"
)

// Wildcard is the token that stands for a variable in a template.
const Wildcard = "<*>"

// Config sets the parser's parameters.
type Config struct {
	// Depth is the depth of the tree's leaves, counting the root, the
	// token-count layer and the leaf layer: Depth-3 leading tokens route a
	// message. Default 4 (one routing token), as in Drain3; the paper tunes
	// it per data set between 3 and 6. Zero means the default; at least 3.
	Depth int
	// SimThreshold is the share of a template's non-wildcard positions a
	// message must match, token for token, to join its cluster. Default
	// 0.4, Drain3's default (the paper tunes it per data set, 0.2 to 0.7).
	// Zero means the default; it must lie in (0, 1].
	SimThreshold float64
	// MaxChildren bounds the children of a routing node; tokens met after
	// that route to the wildcard child. Default 100. Zero means the
	// default; at least 2.
	MaxChildren int
}

// DefaultConfig returns the defaults described on Config's fields.
func DefaultConfig() Config {
	return Config{Depth: 4, SimThreshold: 0.4, MaxChildren: 100}
}

// Validate reports every problem with the config, each naming its field.
func (c *Config) Validate() error {
	var errs []error
	if c.Depth != 0 && c.Depth < 3 {
		errs = append(errs, fmt.Errorf("depth: %d is below 3", c.Depth))
	}
	if c.SimThreshold < 0 || c.SimThreshold > 1 {
		errs = append(errs, fmt.Errorf("sim-threshold: %g is outside (0, 1]", c.SimThreshold))
	}
	if c.MaxChildren != 0 && c.MaxChildren < 2 {
		errs = append(errs, fmt.Errorf("max-children: %d is below 2", c.MaxChildren))
	}
	return errors.Join(errs...)
}

// node is a routing node of the tree. A leaf (at the routing depth, or
// after a message's last token) holds cluster indexes instead.
type node struct {
	children map[string]*node
	clusters []int // indexes into Parser.clusters, in creation order
}

// cluster is one template and how many messages it holds.
type cluster struct {
	tokens []string
	size   int64
}

// Parser mines templates from messages, one at a time.
type Parser struct {
	cfg      Config
	byLen    map[int]*node
	clusters []cluster
	tokens   []string // scratch
}

// New returns an empty parser. Zero fields of c take their defaults; New
// panics on a config that fails Validate (a programmer error).
func New(c Config) *Parser {
	if err := c.Validate(); err != nil {
		panic("drain: " + err.Error())
	}
	d := DefaultConfig()
	if c.Depth == 0 {
		c.Depth = d.Depth
	}
	if c.SimThreshold == 0 {
		c.SimThreshold = d.SimThreshold
	}
	if c.MaxChildren == 0 {
		c.MaxChildren = d.MaxChildren
	}
	return &Parser{cfg: c, byLen: map[int]*node{}}
}

// Add files one message and returns the id of its cluster (from 1).
func (p *Parser) Add(msg string) int {
	p.tokens = appendFields(p.tokens[:0], msg)
	toks := p.tokens
	leaf := p.route(toks, false)
	if leaf != nil {
		if i := p.match(leaf.clusters, toks); i >= 0 {
			c := &p.clusters[i]
			for k, t := range c.tokens {
				if t != Wildcard && t != toks[k] {
					c.tokens[k] = Wildcard
				}
			}
			c.size++
			return i + 1
		}
	}
	leaf = p.route(toks, true)
	i := len(p.clusters)
	p.clusters = append(p.clusters, cluster{tokens: cloneTokens(toks), size: 1})
	leaf.clusters = append(leaf.clusters, i)
	return i + 1
}

// Template returns the template of cluster id, tokens joined by single
// spaces; "" for an id the parser did not give.
func (p *Parser) Template(id int) string {
	if id < 1 || id > len(p.clusters) {
		return ""
	}
	return strings.Join(p.clusters[id-1].tokens, " ")
}

// Size returns how many messages cluster id holds; 0 for an id the
// parser did not give.
func (p *Parser) Size(id int) int64 {
	if id < 1 || id > len(p.clusters) {
		return 0
	}
	return p.clusters[id-1].size
}

// Len returns the number of clusters.
func (p *Parser) Len() int { return len(p.clusters) }

// route walks the tree for toks and returns the leaf it reaches. When
// grow is false it returns nil where the path does not exist; when true
// it adds the missing nodes as the paper's tree update does.
func (p *Parser) route(toks []string, grow bool) *node {
	n := p.byLen[len(toks)]
	if n == nil {
		if !grow {
			return nil
		}
		n = &node{}
		p.byLen[len(toks)] = n
	}
	depth := p.cfg.Depth - 3 // routing tokens
	for k := 0; k < depth && k < len(toks)-1; k++ {
		t := toks[k]
		next := n.children[t]
		if next == nil && !grow {
			next = n.children[Wildcard]
			if next == nil {
				return nil
			}
		}
		if next == nil {
			next = p.grow(n, t)
		}
		n = next
	}
	return n
}

// grow adds (or finds) the child of n that token t routes to.
func (p *Parser) grow(n *node, t string) *node {
	if n.children == nil {
		n.children = map[string]*node{}
	}
	key := t
	_, hasWild := n.children[Wildcard]
	switch {
	case hasDigit(t):
		key = Wildcard
	case hasWild && len(n.children) >= p.cfg.MaxChildren:
		key = Wildcard
	case !hasWild && len(n.children)+1 >= p.cfg.MaxChildren:
		key = Wildcard // the last free child becomes the wildcard
	}
	c := n.children[key]
	if c == nil {
		c = &node{}
		n.children[key] = c
	}
	return c
}

// match returns the cluster of the leaf most like toks, or -1 when none
// reaches the threshold. Ties go to the template with more wildcards,
// then to the older cluster.
func (p *Parser) match(ids []int, toks []string) int {
	best, bestSim, bestWild := -1, -1.0, -1
	for _, i := range ids {
		sim, wild := similarity(p.clusters[i].tokens, toks)
		if sim > bestSim || (sim == bestSim && wild > bestWild) {
			best, bestSim, bestWild = i, sim, wild
		}
	}
	if best < 0 || bestSim < p.cfg.SimThreshold {
		return -1
	}
	return best
}

// similarity is the paper's simSeq: the share of positions where the
// template's token equals the message's, wildcards counting as no match,
// and the template's wildcard count. The sequences have equal lengths.
func similarity(tmpl, toks []string) (float64, int) {
	if len(tmpl) == 0 {
		return 1, 0
	}
	same, wild := 0, 0
	for k, t := range tmpl {
		switch {
		case t == Wildcard:
			wild++
		case t == toks[k]:
			same++
		}
	}
	return float64(same) / float64(len(tmpl)), wild
}

// appendFields appends the white-space separated tokens of s to dst.
func appendFields(dst []string, s string) []string {
	start := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r', '\v', '\f':
			if start >= 0 {
				dst = append(dst, s[start:i])
				start = -1
			}
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		dst = append(dst, s[start:])
	}
	return dst
}

// cloneTokens copies toks and their bytes, so a template does not keep a
// caller's message alive.
func cloneTokens(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = strings.Clone(t)
	}
	return out
}

// hasDigit reports whether s holds an ASCII digit.
func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return true
		}
	}
	return false
}
