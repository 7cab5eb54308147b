//! Red-black tree over the transactional interface (thesis §5.5 RB-tree
//! microbenchmark; CLRS insert/delete with 0 as the null reference).
//! Node: key u64 @0, value @8..24, left @24, right @28, parent @32,
//! colour @36 — 40 B, one 64 B ArchTM block.

use crate::error::TxError;
use crate::kv::{Contents, Engine, Ref, TxOps, Val};

const MAGIC: u64 = 0x5242_5452_4545_0001;
const K: usize = 0;
const V: usize = 8;
const L: usize = 24;
const R: usize = 28;
const P: usize = 32;
const C: usize = 36;
const NODE: usize = 40;
const RED: u32 = 1;
const BLACK: u32 = 0;

/// A persistent red-black tree; its header object holds the root.
pub struct RbTree {
    hdr: Ref,
}

struct Cx<'a> {
    t: &'a mut dyn TxOps,
    hdr: Ref,
}

impl Cx<'_> {
    fn f(&mut self, n: Ref, off: usize) -> Result<u32, TxError> {
        let mut b = [0u8; 4];
        self.t.get(n, off, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn s(&mut self, n: Ref, off: usize, v: u32) -> Result<(), TxError> {
        self.t.put(n, off, &v.to_le_bytes())
    }
    fn key(&mut self, n: Ref) -> Result<u64, TxError> {
        let mut b = [0u8; 8];
        self.t.get(n, K, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    fn root(&mut self) -> Result<Ref, TxError> {
        let h = self.hdr;
        self.f(h, 8)
    }
    fn set_root(&mut self, r: Ref) -> Result<(), TxError> {
        let h = self.hdr;
        self.s(h, 8, r)
    }
    /// Write-locks the header (rewrites the root reference unchanged)
    /// before a structural change. Snapshot isolation only detects
    /// write-write conflicts, and rebalancing decides on nodes it reads but
    /// does not write (uncle, sibling, nephew colours): two inserts/removes
    /// that write disjoint nodes could both commit (write skew) and break
    /// the invariants, e.g. a red-red pair or unequal black heights, after
    /// which a fixup walks into the null reference 0. With every
    /// structural update writing the header, two concurrent ones conflict
    /// (first committer wins, thesis Alg. 1), so they serialise; value
    /// overwrites and lookups stay concurrent.
    fn claim(&mut self) -> Result<(), TxError> {
        let r = self.root()?;
        self.set_root(r)
    }
    fn red(&mut self, n: Ref) -> Result<bool, TxError> {
        Ok(n != 0 && self.f(n, C)? == RED)
    }
    fn color(&mut self, n: Ref, c: u32) -> Result<(), TxError> {
        if self.f(n, C)? != c {
            self.s(n, C, c)?;
        }
        Ok(())
    }

    fn rotate(&mut self, x: Ref, left: bool) -> Result<(), TxError> {
        let (a, b) = if left { (R, L) } else { (L, R) };
        let y = self.f(x, a)?;
        let yb = self.f(y, b)?;
        self.s(x, a, yb)?;
        if yb != 0 {
            self.s(yb, P, x)?;
        }
        let xp = self.f(x, P)?;
        self.s(y, P, xp)?;
        if xp == 0 {
            self.set_root(y)?;
        } else if self.f(xp, L)? == x {
            self.s(xp, L, y)?;
        } else {
            self.s(xp, R, y)?;
        }
        self.s(y, b, x)?;
        self.s(x, P, y)
    }

    fn transplant(&mut self, u: Ref, v: Ref) -> Result<(), TxError> {
        let up = self.f(u, P)?;
        if up == 0 {
            self.set_root(v)?;
        } else if self.f(up, L)? == u {
            self.s(up, L, v)?;
        } else {
            self.s(up, R, v)?;
        }
        if v != 0 {
            self.s(v, P, up)?;
        }
        Ok(())
    }

    /// Key and both children of `n` in one read.
    fn step(&mut self, n: Ref) -> Result<(u64, Ref, Ref), TxError> {
        let mut b = [0u8; 32];
        self.t.get(n, 0, &mut b)?;
        let w = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        Ok((
            u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            w(L),
            w(R),
        ))
    }

    fn find(&mut self, key: u64) -> Result<Ref, TxError> {
        let mut x = self.root()?;
        while x != 0 {
            let (k, l, r) = self.step(x)?;
            if k == key {
                return Ok(x);
            }
            x = if key < k { l } else { r };
        }
        Ok(0)
    }

    fn insert_fixup(&mut self, mut z: Ref) -> Result<(), TxError> {
        loop {
            let p = self.f(z, P)?;
            if p == 0 || !self.red(p)? {
                break;
            }
            let g = self.f(p, P)?;
            let pleft = self.f(g, L)? == p;
            let (near, far) = if pleft { (R, L) } else { (L, R) };
            let u = self.f(g, near)?;
            if self.red(u)? {
                self.color(p, BLACK)?;
                self.color(u, BLACK)?;
                self.color(g, RED)?;
                z = g;
                continue;
            }
            let mut p = p;
            if self.f(p, near)? == z {
                z = p;
                self.rotate(z, pleft)?;
                p = self.f(z, P)?;
            }
            let _ = far;
            self.color(p, BLACK)?;
            self.color(g, RED)?;
            self.rotate(g, !pleft)?;
        }
        let r = self.root()?;
        self.color(r, BLACK)
    }

    fn delete_fixup(&mut self, mut x: Ref, mut xp: Ref) -> Result<(), TxError> {
        while xp != 0 && !self.red(x)? {
            let xleft = self.f(xp, L)? == x;
            let (a, b) = if xleft { (R, L) } else { (L, R) };
            let mut w = self.f(xp, a)?;
            if self.red(w)? {
                self.color(w, BLACK)?;
                self.color(xp, RED)?;
                self.rotate(xp, xleft)?;
                w = self.f(xp, a)?;
            }
            let wb = self.f(w, b)?;
            let wa = self.f(w, a)?;
            if !self.red(wb)? && !self.red(wa)? {
                self.color(w, RED)?;
                x = xp;
                xp = self.f(x, P)?;
            } else {
                if !self.red(wa)? {
                    self.color(wb, BLACK)?;
                    self.color(w, RED)?;
                    self.rotate(w, !xleft)?;
                    w = self.f(xp, a)?;
                }
                let c = self.f(xp, C)?;
                self.color(w, c)?;
                self.color(xp, BLACK)?;
                let wa = self.f(w, a)?;
                if wa != 0 {
                    self.color(wa, BLACK)?;
                }
                self.rotate(xp, xleft)?;
                x = self.root()?;
                xp = 0;
            }
        }
        if x != 0 {
            self.color(x, BLACK)?;
        }
        Ok(())
    }
}

impl RbTree {
    /// Creates an empty tree, its header referenced from `root_off` of the root.
    pub fn create(e: &dyn Engine, root_off: usize) -> Result<RbTree, TxError> {
        let root = e.root();
        let mut hdr = 0;
        e.run(true, &mut |t| {
            hdr = t.alloc(16)?;
            t.put(hdr, 0, &MAGIC.to_le_bytes())?;
            t.put(root, root_off, &hdr.to_le_bytes())
        })?;
        Ok(RbTree { hdr })
    }

    /// Opens the tree referenced from `root_off`.
    pub fn open(e: &dyn Engine, root_off: usize) -> Result<RbTree, TxError> {
        let root = e.root();
        let mut hdr = 0;
        e.run(false, &mut |t| {
            let mut b = [0u8; 4];
            t.get(root, root_off, &mut b)?;
            hdr = u32::from_le_bytes(b);
            let mut m = [0u8; 8];
            if hdr != 0 {
                t.get(hdr, 0, &mut m)?;
            }
            if hdr == 0 || u64::from_le_bytes(m) != MAGIC {
                return Err(TxError::Aborted(format!(
                    "no red-black tree at root offset {root_off}"
                )));
            }
            Ok(())
        })?;
        Ok(RbTree { hdr })
    }

    fn cx<'a>(&self, t: &'a mut dyn TxOps) -> Cx<'a> {
        Cx { t, hdr: self.hdr }
    }

    /// Looks `key` up.
    pub fn get(&self, t: &mut dyn TxOps, key: u64) -> Result<Option<Val>, TxError> {
        let mut c = self.cx(t);
        let n = c.find(key)?;
        if n == 0 {
            return Ok(None);
        }
        let mut v = [0u8; 16];
        c.t.get(n, V, &mut v)?;
        Ok(Some(v))
    }

    /// Inserts or overwrites; returns whether the key was new.
    pub fn put(&self, t: &mut dyn TxOps, key: u64, val: &Val) -> Result<bool, TxError> {
        let mut c = self.cx(t);
        let mut y = 0;
        let mut x = c.root()?;
        let mut less = false;
        while x != 0 {
            y = x;
            let (k, l, r) = c.step(x)?;
            if k == key {
                c.t.put(x, V, val)?;
                return Ok(false);
            }
            less = key < k;
            x = if less { l } else { r };
        }
        c.claim()?;
        let z = c.t.alloc(NODE)?;
        let mut b = [0u8; NODE];
        b[K..K + 8].copy_from_slice(&key.to_le_bytes());
        b[V..V + 16].copy_from_slice(val);
        b[P..P + 4].copy_from_slice(&y.to_le_bytes());
        b[C..C + 4].copy_from_slice(&RED.to_le_bytes());
        c.t.put(z, 0, &b)?;
        if y == 0 {
            c.set_root(z)?;
        } else {
            c.s(y, if less { L } else { R }, z)?;
        }
        c.insert_fixup(z)?;
        Ok(true)
    }

    /// Removes `key`; returns whether it was present.
    pub fn remove(&self, t: &mut dyn TxOps, key: u64) -> Result<bool, TxError> {
        let mut c = self.cx(t);
        let z = c.find(key)?;
        if z == 0 {
            return Ok(false);
        }
        c.claim()?;
        let zl = c.f(z, L)?;
        let zr = c.f(z, R)?;
        let mut orig_red = c.red(z)?;
        let (x, xp);
        if zl == 0 {
            x = zr;
            xp = c.f(z, P)?;
            c.transplant(z, zr)?;
        } else if zr == 0 {
            x = zl;
            xp = c.f(z, P)?;
            c.transplant(z, zl)?;
        } else {
            let mut y = zr;
            loop {
                let l = c.f(y, L)?;
                if l == 0 {
                    break;
                }
                y = l;
            }
            orig_red = c.red(y)?;
            x = c.f(y, R)?;
            if c.f(y, P)? == z {
                xp = y;
            } else {
                xp = c.f(y, P)?;
                c.transplant(y, x)?;
                c.s(y, R, zr)?;
                c.s(zr, P, y)?;
            }
            c.transplant(z, y)?;
            c.s(y, L, zl)?;
            c.s(zl, P, y)?;
            let zc = c.f(z, C)?;
            c.color(y, zc)?;
        }
        if !orig_red {
            c.delete_fixup(x, xp)?;
        }
        c.t.free(z)?;
        Ok(true)
    }

    /// All pairs in order and every node reference, after checking the
    /// red-black invariants (BST order, parent links, no red-red, equal
    /// black heights); a violation is an error naming the node.
    pub fn check(&self, t: &mut dyn TxOps) -> Result<Contents, TxError> {
        let mut c = self.cx(t);
        let mut items = Vec::new();
        let mut refs = vec![self.hdr];
        let r = c.root()?;
        if r != 0 && (c.red(r)? || c.f(r, P)? != 0) {
            return Err(TxError::Aborted(format!("root {r} red or has a parent")));
        }
        walk(&mut c, r, 0, None, None, &mut items, &mut refs)?;
        Ok((items, refs))
    }
}

fn walk(
    c: &mut Cx<'_>,
    n: Ref,
    parent: Ref,
    lo: Option<u64>,
    hi: Option<u64>,
    items: &mut Vec<(u64, Val)>,
    refs: &mut Vec<Ref>,
) -> Result<u32, TxError> {
    let acc = (items, refs);
    if n == 0 {
        return Ok(1);
    }
    let bad = |why: &str| Err(TxError::Aborted(format!("rb node {n}: {why}")));
    if acc.1.len() > 50_000_000 {
        return bad("cycle");
    }
    acc.1.push(n);
    if c.f(n, P)? != parent {
        return bad("parent link");
    }
    let k = c.key(n)?;
    if lo.is_some_and(|l| k <= l) || hi.is_some_and(|h| k >= h) {
        return bad("order");
    }
    let red = c.red(n)?;
    let (l, r) = (c.f(n, L)?, c.f(n, R)?);
    if red && (c.red(l)? || c.red(r)?) {
        return bad("red-red");
    }
    let bl = walk(c, l, n, lo, Some(k), acc.0, acc.1)?;
    let mut v = [0u8; 16];
    c.t.get(n, V, &mut v)?;
    acc.0.push((k, v));
    let br = walk(c, r, n, Some(k), hi, acc.0, acc.1)?;
    if bl != br {
        return bad("black height");
    }
    Ok(bl + u32::from(!red))
}
