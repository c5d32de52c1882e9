//! [`Rows`]: records by id in a slab, so that an index can name a record
//! by its row (a number) and a search can check it at its row: in a dense
//! column of what the check reads ([`Hot`]), not by hashing its id and
//! walking its heap strings.

use std::collections::HashMap;

use slab::Slab;

/// What a search checks of each record, kept in a dense column beside the
/// records (strings as [`Interner`] ids).
pub(crate) trait Hot {
    /// The column's entry.
    type Column;

    /// This record's entry (its id is `id`).
    fn column(&self, id: &str, strings: &mut Interner) -> Self::Column;
}

/// Records of one kind by id, each at a row that stays its own while it
/// lives (replacing a record keeps its row; a removed record's row is
/// reused by a later one), with each row's [`Hot`] column entry. Indexes
/// file rows beside ids. The column follows every change: records change
/// only through [`insert`](Self::insert), [`remove`](Self::remove) and
/// [`with_each_mut`](Self::with_each_mut).
pub(crate) struct Rows<T: Hot> {
    slab: Slab<(String, T)>,
    /// Id → row (hashed with foldhash: ids come from the store, the hasher
    /// is seeded per process).
    rows: HashMap<String, usize, foldhash::fast::RandomState>,
    /// By row; `None`: a free row.
    hot: Vec<Option<T::Column>>,
    strings: Interner,
}

impl<T: Hot> Default for Rows<T> {
    fn default() -> Self {
        Self {
            slab: Slab::new(),
            rows: HashMap::default(),
            hot: Vec::new(),
            strings: Interner::default(),
        }
    }
}

/// A row as indexes file it (a slab key: rows are fewer than `u32::MAX`).
pub(crate) type Row = u32;

impl<T: Hot> Rows<T> {
    /// Record `id`.
    pub(crate) fn get(&self, id: &str) -> Option<&T> {
        self.slab.get(*self.rows.get(id)?).map(|(_, v)| v)
    }

    /// The record at `row`.
    pub(crate) fn at(&self, row: Row) -> Option<&T> {
        self.slab.get(row as usize).map(|(_, v)| v)
    }

    /// The column entry of the record at `row`.
    pub(crate) fn hot(&self, row: Row) -> Option<&T::Column> {
        self.hot.get(row as usize)?.as_ref()
    }

    /// The strings the column's ids name.
    pub(crate) fn strings(&self) -> &Interner {
        &self.strings
    }

    /// Whether record `id` is here.
    pub(crate) fn contains_key(&self, id: &str) -> bool {
        self.rows.contains_key(id)
    }

    /// Store `value` as record `id` (replacing what `id` had, at its row);
    /// returns its row.
    pub(crate) fn insert(&mut self, id: String, value: T) -> Row {
        let column = value.column(&id, &mut self.strings);
        let row = match self.rows.get(&id) {
            Some(&row) => {
                if let Some(place) = self.slab.get_mut(row) {
                    place.1 = value;
                }
                row
            }
            None => {
                let row = self.slab.insert((id.clone(), value));
                self.rows.insert(id, row);
                row
            }
        };
        if self.hot.len() <= row {
            self.hot.resize_with(row + 1, || None);
        }
        self.hot[row] = Some(column);
        Row::try_from(row).unwrap_or(Row::MAX)
    }

    /// Remove record `id`; returns it.
    pub(crate) fn remove(&mut self, id: &str) -> Option<T> {
        let row = self.rows.remove(id)?;
        if let Some(hot) = self.hot.get_mut(row) {
            *hot = None;
        }
        self.slab.try_remove(row).map(|(_, v)| v)
    }

    /// How many records.
    pub(crate) fn len(&self) -> usize {
        self.slab.len()
    }

    /// Every record with its id.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &T)> {
        self.slab.iter().map(|(_, (id, v))| (id, v))
    }

    /// Every record.
    pub(crate) fn values(&self) -> impl Iterator<Item = &T> {
        self.slab.iter().map(|(_, (_, v))| v)
    }

    /// `f` over every record with its id, mutable (the id is not); then
    /// every column entry anew.
    pub(crate) fn with_each_mut<R>(
        &mut self,
        f: impl FnOnce(&mut dyn Iterator<Item = (&String, &mut T)>) -> R,
    ) -> R {
        let out = f(&mut self.slab.iter_mut().map(|(_, (id, v))| (&*id, v)));
        for (row, (id, v)) in &self.slab {
            if let Some(hot) = self.hot.get_mut(row) {
                *hot = Some(v.column(id, &mut self.strings));
            }
        }
        out
    }
}

impl<'a, T: Hot> IntoIterator for &'a Rows<T> {
    type Item = (&'a String, &'a T);
    type IntoIter = Box<dyn Iterator<Item = (&'a String, &'a T)> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

/// Strings of one table, as small integer ids (0 is the empty string).
/// Ids are never reused or removed: the table stays small per distinct value.
#[derive(Debug, Clone)]
pub(crate) struct Interner {
    ids: HashMap<String, u32>,
    names: Vec<String>,
}

impl Default for Interner {
    fn default() -> Self {
        Self {
            ids: HashMap::from([(String::new(), 0)]),
            names: vec![String::new()],
        }
    }
}

impl Interner {
    /// The id of `s`, interned if new.
    pub(crate) fn intern(&mut self, s: &str) -> u32 {
        if let Some(id) = self.ids.get(s) {
            return *id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.ids.insert(s.to_owned(), id);
        self.names.push(s.to_owned());
        id
    }

    /// The id of `s` if interned.
    pub(crate) fn get(&self, s: &str) -> Option<u32> {
        self.ids.get(s).copied()
    }

    /// The string of `id` (empty for an unknown id).
    pub(crate) fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record whose column is its value's string, interned.
    impl Hot for i32 {
        type Column = u32;

        fn column(&self, _: &str, strings: &mut Interner) -> u32 {
            strings.intern(&self.to_string())
        }
    }

    #[test]
    fn a_record_keeps_its_row_until_removed_and_rows_are_reused() {
        let mut rows = Rows::default();
        let a = rows.insert("a".into(), 1);
        let b = rows.insert("b".into(), 2);
        assert_ne!(a, b);
        assert_eq!(rows.insert("a".into(), 3), a, "replacing keeps the row");
        assert_eq!(rows.get("a"), Some(&3));
        assert_eq!(rows.at(a), Some(&3));
        assert_eq!(rows.strings().name(*rows.hot(a).unwrap()), "3");
        assert_eq!(rows.remove("a"), Some(3));
        assert_eq!(rows.remove("a"), None);
        assert_eq!(rows.at(a), None);
        assert_eq!(rows.hot(a), None, "a free row has no column entry");
        assert!(!rows.contains_key("a"));
        let c = rows.insert("c".into(), 4);
        assert_eq!(c, a, "a freed row is reused");
        assert_eq!(rows.get("c"), Some(&4));
        assert_eq!(rows.strings().name(*rows.hot(c).unwrap()), "4");
        assert_eq!(rows.len(), 2);
        let seen = rows.with_each_mut(|all| {
            all.map(|(_, v)| {
                *v *= 10;
            })
            .count()
        });
        assert_eq!(seen, 2);
        assert_eq!(
            rows.strings().name(*rows.hot(c).unwrap()),
            "40",
            "the column follows a change in place"
        );
        let mut all: Vec<(String, i32)> = rows.iter().map(|(k, v)| (k.clone(), *v)).collect();
        all.sort();
        assert_eq!(all, [("b".to_owned(), 20), ("c".to_owned(), 40)]);
        assert_eq!(rows.values().sum::<i32>(), 60);
        assert_eq!((&rows).into_iter().count(), 2);
        assert_eq!(rows.hot(1_000), None);
    }

    #[test]
    fn the_interner_numbers_strings_once() {
        let mut strings = Interner::default();
        assert_eq!(strings.get(""), Some(0));
        let a = strings.intern("a");
        assert_eq!(strings.intern("a"), a);
        assert_ne!(strings.intern("b"), a);
        assert_eq!(strings.name(a), "a");
        assert_eq!(strings.name(99), "");
        assert_eq!(strings.get("c"), None);
    }
}
