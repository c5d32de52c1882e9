//! Approximate nearest neighbours in process: a hierarchical navigable
//! small-world graph (Malkov & Yashunin, 2018) over unit vectors, searched
//! with the caller's access rule *inside* the walk.
//!
//! [`VectorGraph`] keeps its vectors in one contiguous matrix (a row per
//! node, normalised, so that cosine similarity is a dot product) and, once
//! [linked](VectorGraph::link), the graph over them. Nodes are never moved:
//! a removed node stays in the graph as a waypoint (a tombstone) and is
//! never returned; [`VectorGraph::compacted`] rebuilds without them.
//!
//! A search ([`VectorGraph::search`]) walks layer 0 best first as HNSW does,
//! but only records the access rule accepts enter the result list; the
//! others are still walked through. So a restrictive rule costs more steps,
//! never results: when the walk ends with fewer than asked for,
//! [`VectorGraph::nearest`] falls back to the exact scan, which finds every
//! accepted record.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::fusion::top_by_score;
use crate::vector::dot;

/// How a store searches its vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VectorSearch {
    /// Search the graph (`true`) or always scan every vector exactly.
    pub approximate: bool,
    /// Below this many live vectors the scan is exact (and no graph is
    /// built): it is as fast, and exact.
    pub exact_below: usize,
    /// Neighbours per node on the upper layers (twice as many on layer 0).
    pub m: usize,
    /// Candidate list length while linking a new node.
    pub ef_construction: usize,
    /// Candidate list length of a search (at least the number asked for).
    pub ef_search: usize,
}

impl VectorSearch {
    /// The default: the graph from 4,096 vectors on, `M = 16`,
    /// `ef_construction = 100`, `ef_search = 64` (at least the number asked
    /// for). With 64 the graph's LoCoMo recall is within 0.002 of the exact
    /// scan's; with 20, 0.02 below it (`docs/performance.md`).
    pub const APPROXIMATE: Self = Self {
        approximate: true,
        exact_below: 4_096,
        m: 16,
        ef_construction: 100,
        ef_search: 64,
    };

    /// Every search scans every vector exactly.
    pub const EXACT: Self = Self {
        approximate: false,
        ..Self::APPROXIMATE
    };

    /// This search with the graph from `n` live vectors on.
    #[must_use]
    pub const fn exact_below(self, n: usize) -> Self {
        Self {
            exact_below: n,
            ..self
        }
    }

    /// This search with candidate lists of `ef` entries.
    #[must_use]
    pub const fn ef_search(self, ef: usize) -> Self {
        Self {
            ef_search: ef,
            ..self
        }
    }

    /// Whether `live` vectors are searched through the graph.
    pub fn uses_graph(&self, live: usize) -> bool {
        self.approximate && live >= self.exact_below.max(1)
    }

    fn m0(&self) -> usize {
        self.m.max(2) * 2
    }
}

impl Default for VectorSearch {
    fn default() -> Self {
        Self::APPROXIMATE
    }
}

/// A node of the graph (its row in the matrix).
pub type Node = u32;

/// A similarity with a total order (NaN never occurs: rows are finite).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sim(f32);

impl Eq for Sim {}

impl PartialOrd for Sim {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Sim {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Nodes visited by one walk, one bit each.
struct Visited(Vec<u64>);

impl Visited {
    fn new(n: usize) -> Self {
        Self(vec![0; n.div_ceil(64)])
    }

    /// Mark `node`; whether it was new.
    fn insert(&mut self, node: Node) -> bool {
        let (word, bit) = ((node / 64) as usize, 1u64 << (node % 64));
        match self.0.get_mut(word) {
            Some(w) if *w & bit == 0 => {
                *w |= bit;
                true
            }
            _ => false,
        }
    }
}

/// Unit vectors in a matrix and, once linked, an HNSW graph over them.
#[derive(Debug, Clone)]
pub struct VectorGraph {
    params: VectorSearch,
    dims: usize,
    /// Row `i` is node `i`'s unit vector (zero for a zero vector).
    data: Vec<f32>,
    /// Row `i` is node `i`'s vector quantized to `i8` (scaled so its
    /// largest component is ±127): what a walk compares, a quarter of the
    /// memory traffic; the list it finds is rescored with `data`.
    codes: Vec<i8>,
    /// `1 / scale` of each row's codes.
    steps: Vec<f32>,
    removed: Vec<bool>,
    live: usize,
    /// Whether the graph is built (and kept up on insert).
    linked: bool,
    /// Layer 0: node `i`'s neighbours at `i * m0 ..`, `len0[i]` of them.
    layer0: Vec<Node>,
    len0: Vec<u16>,
    /// Layers 1..: `upper[i][l - 1]` are node `i`'s neighbours on layer `l`.
    upper: Vec<Vec<Vec<Node>>>,
    entry: Option<Node>,
    top: usize,
    rng: u64,
}

impl VectorGraph {
    /// An empty matrix of `dims`-dimensional vectors, searched per `params`.
    pub fn new(dims: usize, params: VectorSearch) -> Self {
        Self {
            params,
            dims,
            data: Vec::new(),
            codes: Vec::new(),
            steps: Vec::new(),
            removed: Vec::new(),
            live: 0,
            linked: false,
            layer0: Vec::new(),
            len0: Vec::new(),
            upper: Vec::new(),
            entry: None,
            top: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    /// The vectors' dimension.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Nodes, removed ones included.
    pub fn nodes(&self) -> usize {
        self.removed.len()
    }

    /// Nodes not removed.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Whether the graph is built.
    pub fn is_linked(&self) -> bool {
        self.linked
    }

    /// How it searches.
    pub fn params(&self) -> VectorSearch {
        self.params
    }

    /// Node `node`'s unit vector.
    pub fn vector(&self, node: Node) -> &[f32] {
        let start = node as usize * self.dims;
        self.data.get(start..start + self.dims).unwrap_or(&[])
    }

    /// Whether `node` was removed (or never existed).
    pub fn is_removed(&self, node: Node) -> bool {
        self.removed.get(node as usize).copied().unwrap_or(true)
    }

    /// Add `vector` (of [`dims`](Self::dims) values) as a new node, linked
    /// into the graph when the graph is built or the live count reaches
    /// the parameters' threshold.
    pub fn insert(&mut self, vector: &[f32]) -> Node {
        let node = self.push(&unit(vector, self.dims).collect::<Vec<f32>>());
        if self.linked {
            self.link_node(node);
        } else if self.params.uses_graph(self.live) {
            self.link();
        }
        node
    }

    /// Append unit vector `row` as a new node, unlinked.
    fn push(&mut self, row: &[f32]) -> Node {
        let node = Node::try_from(self.removed.len()).unwrap_or(Node::MAX);
        self.data.extend_from_slice(row);
        let (codes, step) = quantize(row);
        self.codes.extend(codes);
        self.steps.push(step);
        self.removed.push(false);
        self.live += 1;
        self.layer0.extend(std::iter::repeat_n(0, self.params.m0()));
        self.len0.push(0);
        self.upper.push(Vec::new());
        node
    }

    /// Node `node`'s codes and their step.
    fn code(&self, node: Node) -> (&[i8], f32) {
        let start = node as usize * self.dims;
        (
            self.codes.get(start..start + self.dims).unwrap_or(&[]),
            self.steps.get(node as usize).copied().unwrap_or(0.0),
        )
    }

    /// The quantized similarity of `query` (codes and step) to `node`.
    fn sim(&self, query: (&[i8], f32), node: Node) -> f32 {
        let (codes, step) = self.code(node);
        #[allow(clippy::cast_precision_loss)]
        let dot = dot_i8(query.0, codes) as f32;
        dot * query.1 * step
    }

    /// [`sim`](Self::sim) of each of `nodes`, into `out` (cleared first).
    /// A walk's rows are scattered in memory: one byte of every cache line
    /// of every row (and each row's step) is read first, loads that do not
    /// wait on each other, so the rows come from memory together instead
    /// of one after another.
    fn sims(&self, query: (&[i8], f32), nodes: &[Node], out: &mut Vec<f32>) {
        let mut touched = 0i8;
        let mut steps = 0.0f32;
        for &node in nodes {
            let (codes, step) = self.code(node);
            for line in codes.iter().step_by(64) {
                touched ^= *line;
            }
            steps += step;
        }
        std::hint::black_box(steps);
        std::hint::black_box(touched);
        out.clear();
        out.extend(nodes.iter().map(|&node| self.sim(query, node)));
    }

    /// Remove `node`: it is never returned again, and stays a waypoint of
    /// the graph until [`compacted`](Self::compacted).
    pub fn remove(&mut self, node: Node) {
        if let Some(r) = self.removed.get_mut(node as usize)
            && !*r
        {
            *r = true;
            self.live -= 1;
        }
    }

    /// Whether removed nodes outnumber live ones enough to rebuild.
    pub fn needs_compaction(&self) -> bool {
        let removed = self.nodes() - self.live;
        removed >= 1_024 && removed > self.live
    }

    /// The live nodes, renumbered in order, with the graph rebuilt when it
    /// was built; and each old node's new number (`None`: removed).
    pub fn compacted(&self) -> (Self, Vec<Option<Node>>) {
        let mut fresh = Self::new(self.dims, self.params);
        let mut map = Vec::with_capacity(self.nodes());
        for node in 0..self.nodes() {
            let node = Node::try_from(node).unwrap_or(Node::MAX);
            if self.is_removed(node) {
                map.push(None);
            } else {
                // Copy rows without linking, then link once.
                map.push(Some(fresh.push(self.vector(node))));
            }
        }
        if self.linked || fresh.params.uses_graph(fresh.live) {
            fresh.link();
        }
        (fresh, map)
    }

    /// Build the graph over every node (removed ones too: they are
    /// waypoints), and keep it up on insert from now on.
    pub fn link(&mut self) {
        self.linked = true;
        self.entry = None;
        self.top = 0;
        self.len0.iter_mut().for_each(|n| *n = 0);
        self.upper.iter_mut().for_each(Vec::clear);
        for node in 0..self.nodes() {
            self.link_node(Node::try_from(node).unwrap_or(Node::MAX));
        }
    }

    /// The best `limit` nodes by similarity to `query` among those `keep`
    /// accepts (it gives their ranking key, or `None` to leave one out),
    /// as `(key, similarity)`, best first, ties by key: through the graph
    /// when the parameters say so and it finds `limit`, else exactly.
    pub fn nearest<K: Ord>(
        &self,
        query: &[f32],
        mut keep: impl FnMut(Node) -> Option<K>,
        limit: usize,
    ) -> Vec<(K, f32)> {
        if limit == 0 || self.live == 0 {
            return Vec::new();
        }
        let q: Vec<f32> = unit(query, self.dims).collect();
        if self.linked && self.params.uses_graph(self.live) {
            let ef = self.params.ef_search.max(limit);
            let found = self.search(&q, ef, &mut keep);
            if found.len() >= limit {
                return top_by_score(found, limit);
            }
        }
        self.scan(&q, keep, limit)
    }

    /// Every live node scored, the best checked first until `limit` are
    /// accepted and the next is worse than the last of them (equal scores
    /// are all taken: the key orders ties). `query` is a unit vector.
    pub fn scan<K: Ord>(
        &self,
        query: &[f32],
        mut keep: impl FnMut(Node) -> Option<K>,
        limit: usize,
    ) -> Vec<(K, f32)> {
        if limit == 0 || self.dims == 0 {
            return Vec::new();
        }
        let mut scored: Vec<(f32, Node)> = self
            .data
            .chunks_exact(self.dims)
            .zip(&self.removed)
            .enumerate()
            .filter(|(_, (_, removed))| !**removed)
            .map(|(i, (row, _))| (dot(query, row), Node::try_from(i).unwrap_or(Node::MAX)))
            .collect();
        let by_score = |a: &(f32, Node), b: &(f32, Node)| b.0.total_cmp(&a.0);
        let mut accepted: Vec<(K, f32)> = Vec::new();
        let mut start = 0;
        let mut window = limit.saturating_mul(4).max(64);
        while start < scored.len() {
            let end = start.saturating_add(window).min(scored.len());
            let rest = &mut scored[start..];
            if end - start < rest.len() {
                rest.select_nth_unstable_by(end - start - 1, by_score);
            }
            let prefix = &mut scored[start..end];
            prefix.sort_unstable_by(by_score);
            for &(score, node) in prefix.iter() {
                if accepted.len() >= limit && score < accepted[limit - 1].1 {
                    return top_by_score(accepted, limit);
                }
                if let Some(key) = keep(node) {
                    accepted.push((key, score));
                }
            }
            start = end;
            window = window.saturating_mul(4);
        }
        top_by_score(accepted, limit)
    }

    /// Up to `ef` accepted nodes nearest `query` (a unit vector) found by
    /// walking the graph: greedily down the upper layers, then best first
    /// on layer 0, where every node reached is walked through but only
    /// live nodes `keep` accepts enter the list (`keep` is asked once per
    /// node, and only of nodes that would enter it). The walk compares
    /// quantized vectors; the list is scored exactly.
    pub fn search<K>(
        &self,
        query: &[f32],
        ef: usize,
        keep: &mut impl FnMut(Node) -> Option<K>,
    ) -> Vec<(K, f32)> {
        let Some(mut ep) = self.entry else {
            return Vec::new();
        };
        let (codes, step) = quantize(query);
        let q = (codes.as_slice(), step);
        let mut best = self.sim(q, ep);
        for layer in (1..=self.top).rev() {
            (ep, best) = self.greedy(q, ep, best, layer);
        }
        let mut visited = Visited::new(self.nodes());
        visited.insert(ep);
        let mut candidates = BinaryHeap::from([(Sim(best), ep)]);
        // The list: (similarity, its index in `keys`), worst on top.
        let mut list: BinaryHeap<Reverse<(Sim, usize)>> = BinaryHeap::new();
        let mut keys: Vec<(Node, Option<K>)> = Vec::new();
        let mut offer = |node: Node, sim: f32, list: &mut BinaryHeap<Reverse<(Sim, usize)>>| {
            if self.is_removed(node) {
                return;
            }
            if list.len() >= ef && list.peek().is_some_and(|Reverse((w, _))| sim <= w.0) {
                return;
            }
            if let Some(key) = keep(node) {
                list.push(Reverse((Sim(sim), keys.len())));
                keys.push((node, Some(key)));
                if list.len() > ef {
                    list.pop();
                }
            }
        };
        offer(ep, best, &mut list);
        // The unvisited neighbours of the node expanded, and their similarities.
        let (mut fresh, mut sims) = (Vec::new(), Vec::new());
        while let Some((Sim(sim), node)) = candidates.pop() {
            if list.len() >= ef && list.peek().is_some_and(|Reverse((w, _))| sim < w.0) {
                break;
            }
            self.expand(q, node, 0, &mut visited, &mut fresh, &mut sims);
            for (&next, &s) in fresh.iter().zip(&sims) {
                let worst = list.peek().map(|Reverse((w, _))| w.0);
                if list.len() < ef || worst.is_some_and(|w| s > w) {
                    candidates.push((Sim(s), next));
                    offer(next, s, &mut list);
                }
            }
        }
        list.into_iter()
            .filter_map(|Reverse((_, i))| {
                let (node, key) = keys.get_mut(i)?;
                Some((key.take()?, dot(query, self.vector(*node))))
            })
            .collect()
    }

    /// One step of a best-first walk: the neighbours of `node` on `layer`
    /// not visited yet into `fresh` (now marked visited), and their
    /// similarities to `query` into `sims` ([`Self::sims`]).
    fn expand(
        &self,
        query: (&[i8], f32),
        node: Node,
        layer: usize,
        visited: &mut Visited,
        fresh: &mut Vec<Node>,
        sims: &mut Vec<f32>,
    ) {
        fresh.clear();
        fresh.extend(
            self.neighbours(node, layer)
                .iter()
                .copied()
                .filter(|&next| visited.insert(next)),
        );
        self.sims(query, fresh, sims);
    }

    /// The node nearest `query` on `layer`, greedily from `ep`.
    fn greedy(
        &self,
        query: (&[i8], f32),
        mut ep: Node,
        mut best: f32,
        layer: usize,
    ) -> (Node, f32) {
        loop {
            let mut moved = false;
            for &next in self.neighbours(ep, layer) {
                let s = self.sim(query, next);
                if s > best {
                    (ep, best, moved) = (next, s, true);
                }
            }
            if !moved {
                return (ep, best);
            }
        }
    }

    /// Node `node`'s neighbours on `layer`.
    fn neighbours(&self, node: Node, layer: usize) -> &[Node] {
        let i = node as usize;
        if layer == 0 {
            let m0 = self.params.m0();
            let n = self.len0.get(i).copied().unwrap_or(0) as usize;
            self.layer0.get(i * m0..i * m0 + n).unwrap_or(&[])
        } else {
            self.upper
                .get(i)
                .and_then(|l| l.get(layer - 1))
                .map_or(&[], Vec::as_slice)
        }
    }

    fn set_neighbours(&mut self, node: Node, layer: usize, nodes: &[Node]) {
        let i = node as usize;
        if layer == 0 {
            let m0 = self.params.m0();
            let n = nodes.len().min(m0);
            if let Some(row) = self.layer0.get_mut(i * m0..i * m0 + n) {
                row.copy_from_slice(&nodes[..n]);
            }
            if let Some(len) = self.len0.get_mut(i) {
                *len = u16::try_from(n).unwrap_or(u16::MAX);
            }
        } else if let Some(l) = self.upper.get_mut(i).and_then(|l| l.get_mut(layer - 1)) {
            l.clear();
            l.extend_from_slice(nodes);
        }
    }

    /// A random level: `floor(-ln(U) / ln(M))`, at most 16.
    fn random_level(&mut self) -> usize {
        // xorshift64*: deterministic, so a graph is the same every run.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let bits = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        #[allow(clippy::cast_precision_loss)]
        let u = (bits as f64 + 1.0) / (1u64 << 53) as f64;
        #[allow(clippy::cast_precision_loss)]
        let ml = 1.0 / (self.params.m.max(2) as f64).ln();
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let level = (-u.ln() * ml).floor() as usize;
        level.min(16)
    }

    /// Up to `ef` nodes nearest `query` on `layer` from `entry`, best first
    /// (every node: linking walks through removed ones too).
    fn layer_search(
        &self,
        query: (&[i8], f32),
        entry: (f32, Node),
        ef: usize,
        layer: usize,
    ) -> Vec<(f32, Node)> {
        let mut visited = Visited::new(self.nodes());
        visited.insert(entry.1);
        let mut candidates = BinaryHeap::from([(Sim(entry.0), entry.1)]);
        let mut list = BinaryHeap::from([Reverse((Sim(entry.0), entry.1))]);
        let (mut fresh, mut sims) = (Vec::new(), Vec::new());
        while let Some((Sim(sim), node)) = candidates.pop() {
            if list.len() >= ef && list.peek().is_some_and(|Reverse((w, _))| sim < w.0) {
                break;
            }
            self.expand(query, node, layer, &mut visited, &mut fresh, &mut sims);
            for (&next, &s) in fresh.iter().zip(&sims) {
                if list.len() < ef || list.peek().is_some_and(|Reverse((w, _))| s > w.0) {
                    candidates.push((Sim(s), next));
                    list.push(Reverse((Sim(s), next)));
                    if list.len() > ef {
                        list.pop();
                    }
                }
            }
        }
        let mut out: Vec<(f32, Node)> = list
            .into_iter()
            .map(|Reverse((Sim(s), n))| (s, n))
            .collect();
        out.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        out
    }

    /// The paper's neighbour heuristic: from `candidates` (best first, by
    /// similarity to the node being linked), keep one only when it is
    /// nearer that node than every one already kept, up to `m`.
    fn select(&self, candidates: &[(f32, Node)], m: usize) -> Vec<Node> {
        let mut kept: Vec<Node> = Vec::with_capacity(m);
        for &(sim, c) in candidates {
            if kept.len() >= m {
                break;
            }
            let v = self.code(c);
            if kept.iter().all(|&k| self.sim(v, k) < sim) {
                kept.push(c);
            }
        }
        kept
    }

    /// Link `node` into the graph.
    fn link_node(&mut self, node: Node) {
        let level = self.random_level();
        if let Some(l) = self.upper.get_mut(node as usize) {
            *l = vec![Vec::new(); level];
        }
        let Some(mut ep) = self.entry else {
            self.entry = Some(node);
            self.top = level;
            return;
        };
        let (codes, step) = self.code(node);
        let codes = codes.to_vec();
        let query = (codes.as_slice(), step);
        let mut best = self.sim(query, ep);
        for layer in (level + 1..=self.top).rev() {
            (ep, best) = self.greedy(query, ep, best, layer);
        }
        let mut entry = (best, ep);
        for layer in (0..=level.min(self.top)).rev() {
            let found = self.layer_search(query, entry, self.params.ef_construction, layer);
            let max = if layer == 0 {
                self.params.m0()
            } else {
                self.params.m.max(2)
            };
            // A new node takes `m` links on every layer (layer 0 allows
            // others up to `m0` = 2m links back).
            let chosen = self.select(&found, self.params.m.max(2));
            self.set_neighbours(node, layer, &chosen);
            for &other in &chosen {
                let mut links: Vec<Node> = self.neighbours(other, layer).to_vec();
                if links.len() < max {
                    links.push(node);
                } else {
                    let base = self.code(other);
                    let mut scored: Vec<(f32, Node)> = links
                        .iter()
                        .chain(std::iter::once(&node))
                        .map(|&n| (self.sim(base, n), n))
                        .collect();
                    scored.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                    links = self.select(&scored, max);
                }
                self.set_neighbours(other, layer, &links);
            }
            if let Some(&first) = found.first() {
                entry = first;
            }
        }
        if level > self.top {
            self.top = level;
            self.entry = Some(node);
        }
    }
}

/// `row` quantized to `i8`, its largest component to ±127, and the step
/// (what one unit of a code is worth; 0 for a zero row).
fn quantize(row: &[f32]) -> (Vec<i8>, f32) {
    let max = row.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if !(max.is_finite() && max > 0.0) {
        return (vec![0; row.len()], 0.0);
    }
    let scale = 127.0 / max;
    #[allow(clippy::cast_possible_truncation)]
    let codes = row
        .iter()
        .map(|x| (x * scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (codes, max / 127.0)
}

/// The dot product of two code rows (over the shorter's length): SimSIMD's
/// kernel for the machine it runs on (AVX2, AVX-512 VNNI, NEON, SVE, chosen
/// once per process) when they are of one length, as they are in a graph;
/// else [`dot_i8_portable`].
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    use simsimd::SpatialSimilarity;
    match i8::dot(a, b) {
        // Exact: |sum| ≤ 127² × len, far below 2⁵³.
        #[allow(clippy::cast_possible_truncation)]
        Some(dot) if a.len() == b.len() => dot as i32,
        _ => dot_i8_portable(a, b),
    }
}

/// [`dot_i8`] in portable Rust, in sixteen independent lanes (each
/// product fits an `i16`).
fn dot_i8_portable(a: &[i8], b: &[i8]) -> i32 {
    const LANES: usize = 16;
    let mut sum = [0i32; LANES];
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    for (ca, cb) in a.chunks_exact(LANES).zip(b.chunks_exact(LANES)) {
        for i in 0..LANES {
            sum[i] += i32::from(i16::from(ca[i]) * i16::from(cb[i]));
        }
    }
    let tail = n / LANES * LANES;
    sum.iter().sum::<i32>()
        + a[tail..]
            .iter()
            .zip(&b[tail..])
            .map(|(x, y)| i32::from(i16::from(*x) * i16::from(*y)))
            .sum::<i32>()
}

/// `vector` scaled to unit length as `dims` values (a zero vector, or one
/// of another length, as zeros: similar to nothing). The norm is taken in
/// double precision, so values near `f32::MAX` do not overflow it.
fn unit(vector: &[f32], dims: usize) -> impl Iterator<Item = f32> + '_ {
    let norm = if vector.len() == dims {
        vector
            .iter()
            .map(|x| f64::from(*x).powi(2))
            .sum::<f64>()
            .sqrt()
    } else {
        0.0
    };
    let ok = norm.is_finite() && norm > 0.0;
    (0..dims).map(move |i| {
        if ok {
            #[allow(clippy::cast_possible_truncation)]
            let x = (f64::from(vector.get(i).copied().unwrap_or(0.0)) / norm) as f32;
            x
        } else {
            0.0
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::cosine;

    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> f32 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 33) % 10_000) as f32 / 10_000.0 - 0.5
        }
    }

    /// `n` vectors of `dims` around 50 centres (like sentence embeddings).
    fn clustered(n: usize, dims: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut rng = Lcg(seed);
        let centres: Vec<Vec<f32>> = (0..50)
            .map(|_| (0..dims).map(|_| rng.next()).collect())
            .collect();
        (0..n)
            .map(|i| {
                centres[i % 50]
                    .iter()
                    .map(|c| c + 0.4 * rng.next())
                    .collect()
            })
            .collect()
    }

    fn brute<K: Ord>(
        vectors: &[Vec<f32>],
        query: &[f32],
        keep: impl Fn(usize) -> Option<K>,
        limit: usize,
    ) -> Vec<(K, f32)> {
        top_by_score(
            vectors
                .iter()
                .enumerate()
                .filter_map(|(i, v)| Some((keep(i)?, cosine(query, v))))
                .collect(),
            limit,
        )
    }

    #[test]
    fn the_graph_finds_what_the_exact_scan_finds() {
        let vectors = clustered(3_000, 24, 1);
        let mut graph = VectorGraph::new(24, VectorSearch::APPROXIMATE.exact_below(1_000));
        for v in &vectors {
            graph.insert(v);
        }
        assert!(graph.is_linked(), "linked once 1,000 vectors were in");
        let queries = clustered(100, 24, 2);
        let (mut hits, mut total) = (0, 0);
        for q in &queries {
            let want: Vec<usize> = brute(&vectors, q, Some, 10)
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            let unit: Vec<f32> = unit(q, 24).collect();
            let got = graph.search(&unit, 64, &mut |n| Some(n as usize));
            hits += want
                .iter()
                .filter(|w| got.iter().any(|(k, _)| k == *w))
                .count();
            total += want.len();
        }
        let recall = hits as f64 / total as f64;
        assert!(recall >= 0.97, "recall@10 {recall}");
    }

    /// However few records the rule accepts, `nearest` returns `limit` of
    /// them when that many exist (the walk, or the exact scan after it).
    #[test]
    fn a_restrictive_rule_costs_steps_not_results() {
        let vectors = clustered(2_000, 16, 3);
        let mut graph = VectorGraph::new(16, VectorSearch::APPROXIMATE.exact_below(100));
        for v in &vectors {
            graph.insert(v);
        }
        for modulo in [1, 7, 97, 499, 1_000, 5_000] {
            let keep = |n: Node| (n as usize).is_multiple_of(modulo).then_some(n);
            let exist = (0..2_000).filter(|i| i % modulo == 0).count();
            for q in clustered(5, 16, 4) {
                let got = graph.nearest(&q, keep, 10);
                assert_eq!(got.len(), exist.min(10), "modulo {modulo}");
                assert!(got.iter().all(|(n, _)| keep(*n).is_some()));
            }
        }
    }

    #[test]
    fn removed_nodes_are_never_returned_and_compaction_keeps_the_rest() {
        let vectors = clustered(3_000, 8, 5);
        let mut graph = VectorGraph::new(8, VectorSearch::APPROXIMATE.exact_below(500));
        for v in &vectors {
            graph.insert(v);
        }
        for n in (0..3_000).filter(|n| n % 3 != 0) {
            graph.remove(n);
        }
        graph.remove(1);
        assert_eq!(graph.live(), 1_000);
        assert!(graph.needs_compaction());
        let q = &vectors[9];
        let got = graph.nearest(q, Some, 20);
        assert_eq!(got.len(), 20);
        assert!(got.iter().all(|(n, _)| n % 3 == 0));
        let (fresh, map) = graph.compacted();
        assert_eq!((fresh.nodes(), fresh.live()), (1_000, 1_000));
        assert!(fresh.is_linked());
        assert_eq!(map[3], Some(1));
        assert_eq!(map[4], None);
        let again: Vec<Node> = fresh
            .nearest(q, Some, 20)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let mapped: Vec<Node> = got.iter().filter_map(|(n, _)| map[*n as usize]).collect();
        let common = again.iter().filter(|n| mapped.contains(n)).count();
        assert!(common >= 18, "{common} of 20 the same after compaction");
    }

    /// The exact mode is the brute-force top `limit`, ties included.
    #[test]
    fn the_exact_mode_is_the_brute_force_top_k() {
        let mut vectors = clustered(600, 8, 6);
        vectors[10] = vec![0.0; 8];
        vectors[20] = vec![0.25; 8];
        vectors[30] = vec![0.25; 8];
        let mut graph = VectorGraph::new(8, VectorSearch::EXACT);
        for v in &vectors {
            graph.insert(v);
        }
        assert!(!graph.is_linked());
        for (q, modulo, limit) in [
            (vectors[3].clone(), 1, 10),
            (vec![1.0; 8], 2, 5),
            (vec![0.25; 8], 3, 50),
            (vectors[7].clone(), 1000, 3),
        ] {
            let keep = |n: usize| n.is_multiple_of(modulo).then_some(n);
            let want: Vec<usize> = brute(&vectors, &q, keep, limit)
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            let got: Vec<usize> = graph
                .nearest(&q, |n| keep(n as usize), limit)
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            assert_eq!(got, want, "{modulo} {limit}");
        }
    }

    #[test]
    fn the_kernel_is_the_portable_dot_product() {
        let mut x = 11i32;
        let mut code = || {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            i8::try_from((x >> 16).rem_euclid(255) - 127).unwrap_or(0)
        };
        for len in [0, 1, 7, 8, 15, 16, 17, 63, 64, 65, 384, 385, 1536] {
            let a: Vec<i8> = (0..len).map(|_| code()).collect();
            let b: Vec<i8> = (0..len).map(|_| code()).collect();
            assert_eq!(dot_i8(&a, &b), dot_i8_portable(&a, &b), "length {len}");
        }
        // Rows of other lengths: over the shorter's.
        assert_eq!(dot_i8(&[3; 20], &[2; 10]), 60);
        // The extremes are exact.
        let (max, min) = (vec![127i8; 1536], vec![-127i8; 1536]);
        assert_eq!(dot_i8(&max, &min), -127 * 127 * 1536);
        assert_eq!(dot_i8(&max, &max), 127 * 127 * 1536);
    }

    #[test]
    fn quantized_similarity_is_close_to_the_exact_one() {
        let vectors = clustered(200, 384, 8);
        let units: Vec<Vec<f32>> = vectors.iter().map(|v| unit(v, 384).collect()).collect();
        for pair in units.windows(2) {
            let (a, sa) = quantize(&pair[0]);
            let (b, sb) = quantize(&pair[1]);
            #[allow(clippy::cast_precision_loss)]
            let approx = dot_i8(&a, &b) as f32 * sa * sb;
            assert!((approx - dot(&pair[0], &pair[1])).abs() < 0.01, "{approx}");
        }
        assert_eq!(quantize(&[0.0, 0.0]), (vec![0, 0], 0.0));
        assert_eq!(quantize(&[0.5, -1.0]).0, [64, -127]);
        assert_eq!(dot_i8(&[127; 40], &[-127; 40]), -127 * 127 * 40);
    }

    #[test]
    fn huge_and_zero_vectors_are_unit_or_zero() {
        let u: Vec<f32> = unit(&[3.0e38, -3.0e38, 1.0e38], 3).collect();
        assert!((dot(&u, &u) - 1.0).abs() < 1e-6);
        assert!(unit(&[0.0, 0.0], 2).all(|x| x == 0.0));
        assert!(unit(&[1.0], 2).all(|x| x == 0.0), "another length");
    }
}

/// `cargo test --release -p openvibe-retrieval --lib sweep -- --ignored --nocapture`:
/// recall and latency of the walk against `ef` on the benchmark's data.
#[cfg(test)]
mod sweep {
    use super::*;

    #[test]
    #[ignore = "a measurement (a minute in release), not a check"]
    fn sweep_ef() {
        let (n, dims) = (100_000usize, 384usize);
        let mut state = 2024u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u1 = ((state >> 33) % 1_000_000) as f64 / 1_000_000.0 + 1e-7;
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u2 = ((state >> 33) % 1_000_000) as f64 / 1_000_000.0;
            ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
        };
        let centres: Vec<Vec<f32>> = (0..1000)
            .map(|_| unit(&(0..dims).map(|_| next()).collect::<Vec<_>>(), dims).collect())
            .collect();
        let scale = 0.6 / (dims as f32).sqrt();
        let mut near = |i: usize| -> Vec<f32> {
            let c = &centres[i % 1000];
            c.iter().map(|x| x + scale * next()).collect()
        };
        let t0 = std::time::Instant::now();
        let mut graph = VectorGraph::new(dims, VectorSearch::APPROXIMATE);
        for i in 0..n {
            let v = near(i * 7919);
            graph.insert(&v);
        }
        eprintln!("built {n} in {:.1}s", t0.elapsed().as_secs_f64());
        let queries: Vec<Vec<f32>> = (0..200)
            .map(|i| unit(&near(i * 31), dims).collect())
            .collect();
        for keep_mod in [1usize, 3] {
            for (limit, ef) in [
                (10, 10),
                (10, 20),
                (10, 32),
                (10, 64),
                (30, 30),
                (30, 48),
                (30, 64),
            ] {
                let keep = |node: Node| (node as usize).is_multiple_of(keep_mod).then_some(node);
                let (mut hit, mut all, mut time) = (0, 0, 0.0);
                for q in &queries {
                    let want: Vec<Node> = graph
                        .scan(q, keep, limit)
                        .into_iter()
                        .map(|(k, _)| k)
                        .collect();
                    let t = std::time::Instant::now();
                    let mut k = keep;
                    let got = top_by_score(graph.search(q, ef, &mut k), limit);
                    time += t.elapsed().as_secs_f64();
                    hit += got.iter().filter(|(k, _)| want.contains(k)).count();
                    all += want.len();
                }
                eprintln!(
                    "keep 1/{keep_mod} limit {limit} ef {ef}: recall {:.3}, {:.0} us",
                    hit as f64 / all as f64,
                    time / queries.len() as f64 * 1e6
                );
            }
        }
    }
}
