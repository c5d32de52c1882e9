//! Spaces in the leak check: created with random members, posted to and
//! changed under the space rules, read by id, by page and through their
//! messages (the registry's `message` kind).

use std::collections::HashMap;

use openvibe_protocols::{
    CallerContext, Classification, MESSAGE_KIND, Member, MessageQuery, SPACE_KIND, Space,
    SpaceMessage, SpaceQuery, StoreError,
};

use super::{Kept, Leak, LeakKind};
use crate::governance::draw::{DOMAINS, Rng, admin_of, principal_keys, random_namespaces};

/// Spaces: posts (members with the write right post) and member changes
/// (admins with it, or managers of the namespace) allowed or refused as
/// the rules say ([`Space::require_post`], [`Space::require_manage`]), a
/// refused member change changing nothing; read by id, by page (newest
/// first), and through their messages: every allowed post when the space
/// is readable (the tenant, the namespace, the clearance on its domain,
/// and membership), `NotFound` otherwise.
pub(super) struct SpaceLeak;

/// The posts the rules allowed, per space.
#[derive(Default)]
pub(super) struct Posted(HashMap<String, usize>);

impl LeakKind for SpaceLeak {
    const KIND: &'static str = SPACE_KIND;
    const CARRIES: &'static [&'static str] = &[MESSAGE_KIND];
    const WRITES: usize = 60;
    const CHANGES: usize = 300;
    const READS: usize = 500;
    const MIX: [usize; 3] = [1, 1, 1];

    type Record = Space;
    type Query = SpaceQuery;
    type State = Posted;

    /// Each principal random callers are joins with a 40% chance (an
    /// admin 30% of those).
    fn random_record(rng: &mut Rng, i: usize, ns: &str) -> Space {
        let mut space = Space::new(format!("space {i}"))
            .id(format!("sp{i}"))
            .domain(*rng.pick(DOMAINS))
            .namespace(ns);
        for key in principal_keys() {
            if rng.chance(40) {
                let mut member = Member::new(key);
                member.admin = rng.chance(30);
                space = space.member(member);
            }
        }
        space.meta.classification = *rng.pick(&Classification::ALL);
        space
    }

    async fn write(
        cx: &Leak<'_>,
        writer: &CallerContext,
        space: Space,
    ) -> Result<Space, StoreError> {
        cx.s.spaces.create(writer, space).await
    }

    async fn get(
        cx: &Leak<'_>,
        reader: &CallerContext,
        id: &str,
    ) -> Result<Option<Space>, StoreError> {
        cx.s.spaces.get(reader, id).await
    }

    fn random_query(rng: &mut Rng) -> SpaceQuery {
        let mut query = SpaceQuery::new().limit(1 + rng.below(30));
        if rng.chance(40) {
            query.namespaces = random_namespaces(rng);
        }
        query
    }

    async fn page(
        cx: &Leak<'_>,
        reader: &CallerContext,
        query: &SpaceQuery,
    ) -> Result<Vec<Space>, StoreError> {
        Ok(cx.s.spaces.list(reader, query).await?.items)
    }

    fn selects(reader: &CallerContext, query: &SpaceQuery, space: &Space) -> bool {
        reader
            .list_scope(&query.namespaces)
            .contains(&space.meta.namespace)
    }

    fn limit(query: &SpaceQuery) -> usize {
        query.limit
    }

    /// Its messages: every allowed post when readable, `NotFound`
    /// otherwise.
    async fn special(
        cx: &Leak<'_>,
        _: &mut Rng,
        reader: &CallerContext,
        space: &Space,
        _: &[Space],
        posted: &Posted,
    ) {
        let seed = cx.seed;
        let got =
            cx.s.spaces
                .messages(reader, &space.id, &MessageQuery::after(0).limit(1000))
                .await;
        match (got, space.readable(reader)) {
            (Ok(messages), true) => assert_eq!(
                messages.len(),
                posted.0.get(&space.id).copied().unwrap_or(0),
                "seed {seed}: messages of {}",
                space.id
            ),
            (Err(StoreError::NotFound { .. }), false) => {}
            (got, visible) => panic!(
                "seed {seed}: messages of {} as {reader:?}: got {got:?}, visible {visible}",
                space.id
            ),
        }
    }

    /// A post (70%) or a member change of a random space.
    async fn change(
        cx: &Leak<'_>,
        rng: &mut Rng,
        caller: &CallerContext,
        step: usize,
        stored: &mut [Space],
        posted: &mut Posted,
    ) {
        let seed = cx.seed;
        let idx = rng.below(stored.len());
        let target = stored[idx].clone();
        let visible = target.readable(caller);
        if rng.chance(70) {
            let may = visible && target.require_post(caller).is_ok();
            let text = SpaceMessage::text(format!("post {step}"));
            match (
                cx.s.spaces.post(caller, &target.id, text).await,
                visible,
                may,
            ) {
                (Ok(m), _, true) => {
                    assert_eq!(m.meta.owner, caller.owner_key(), "seed {seed}");
                    *posted.0.entry(target.id.clone()).or_default() += 1;
                }
                (Err(StoreError::NotFound { .. }), false, _)
                | (Err(StoreError::Unauthorized { .. }), true, false) => {}
                (got, visible, may) => panic!(
                    "seed {seed}: post to {} as {caller:?}: got {got:?}, visible {visible}, may {may}",
                    target.id
                ),
            }
            return;
        }
        let may = visible && target.require_manage(caller).is_ok();
        let who = rng.pick(&principal_keys()).clone();
        match (
            cx.s.spaces
                .add_member(caller, &target.id, Member::new(who.clone()))
                .await,
            visible,
            may,
        ) {
            (Ok(updated), _, true) => {
                assert!(updated.find_member(&who).is_some(), "seed {seed}");
                stored[idx] = updated;
            }
            // Demoting the last admin is refused whoever asks.
            (Err(StoreError::Conflict { .. }), _, true) => {}
            (Err(StoreError::NotFound { .. }), false, _)
            | (Err(StoreError::Unauthorized { .. }), true, false) => {
                let still =
                    cx.s.spaces
                        .get(&admin_of(&target.meta), &target.id)
                        .await
                        .unwrap();
                assert_eq!(
                    still.map(|space| space.members),
                    Some(target.members.clone()),
                    "seed {seed}: a refused member change changed {}",
                    target.id
                );
            }
            (got, visible, may) => panic!(
                "seed {seed}: add {who} to {} as {caller:?}: got {got:?}, visible {visible}, may {may}",
                target.id
            ),
        }
    }

    fn enough(posted: &Posted) -> bool {
        posted.0.values().sum::<usize>() > 0
    }
}
