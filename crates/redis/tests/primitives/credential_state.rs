//! A Google credential's rejection against a real redis-server: it is set
//! only while the stored token still holds the refresh token the refused
//! call read (or still none, when it read none), so a refusal of the old
//! credential never marks one a person set meanwhile. Likewise a refreshed
//! token is stored only while the refresh token refreshed with is stored,
//! so a late refresh never puts the old one back over the person's.

use redis::AsyncCommands;
use sluice_redis::credential_state::GOOGLE_TOKEN;
use sluice_redis::{CredentialState, StoredToken, Tag, TokenStore};
use sluice_testkit::TestRedis;

type Conn = sluice_redis::Connection;

const NOW_MS: u64 = 1_763_000_000_000;

async fn parts(redis: &TestRedis) -> (CredentialState<Conn>, TokenStore<Conn>) {
    let conn = redis.conn().await;
    (CredentialState::new(conn.clone(), redis.keyspace()), TokenStore::new(conn, redis.keyspace()))
}

async fn store(tokens: &TokenStore<Conn>, credential: &str, refresh: &str) {
    let token = StoredToken {
        access_token: "access".into(),
        access_expires_ms: NOW_MS + 3_600_000,
        refresh_token: refresh.into(),
        refresh_expires_ms: NOW_MS + 86_400_000_000,
    };
    tokens.put(&Tag::for_credential(credential), GOOGLE_TOKEN, &token, NOW_MS).await.unwrap();
}

#[tokio::test]
async fn a_refusal_rejects_the_credential_only_while_the_refresh_token_it_read_is_stored() {
    let redis = TestRedis::new("credential_reject_if_still_stored");
    let (state, tokens) = parts(&redis).await;
    store(&tokens, "cred-1", "refresh-old").await;
    assert!(state.reject("cred-1", "invalid_grant", Some("refresh-old")).await.unwrap(), "still the one read");
    assert_eq!(state.rejected("cred-1").await.unwrap().as_deref(), Some("invalid_grant"));

    // A person sets a new one (`sluice credentials set`: store, then accept);
    // a flush refused with the old one then rejects nothing.
    store(&tokens, "cred-1", "refresh-new").await;
    state.accept("cred-1").await.unwrap();
    assert!(!state.reject("cred-1", "invalid_grant", Some("refresh-old")).await.unwrap());
    assert_eq!(state.rejected("cred-1").await.unwrap(), None, "the new credential is not marked");

    // An earlier rejection is left as it was, not overwritten.
    state.reject("cred-1", "the new one refused too", Some("refresh-new")).await.unwrap();
    assert!(!state.reject("cred-1", "stale", Some("refresh-old")).await.unwrap());
    assert_eq!(state.rejected("cred-1").await.unwrap().as_deref(), Some("the new one refused too"));
    // Another credential's token is not looked at.
    assert!(!state.reject("cred-2", "invalid_grant", Some("refresh-new")).await.unwrap());
    assert_eq!(state.rejected("cred-2").await.unwrap(), None);
}

#[tokio::test]
async fn no_token_rejects_the_credential_only_while_there_is_still_none() {
    let redis = TestRedis::new("credential_reject_if_still_none");
    let (state, tokens) = parts(&redis).await;
    assert!(state.reject("cred-1", "no Google token", None).await.unwrap());
    assert_eq!(state.rejected("cred-1").await.unwrap().as_deref(), Some("no Google token"));
    state.accept("cred-1").await.unwrap();

    store(&tokens, "cred-1", "refresh-new").await;
    assert!(!state.reject("cred-1", "no Google token", None).await.unwrap(), "one was set meanwhile");
    assert_eq!(state.rejected("cred-1").await.unwrap(), None);

    // The token gone since it was read (its TTL ran out): not the one read.
    let key = tokens.key(&Tag::for_credential("cred-1"), GOOGLE_TOKEN);
    let mut conn = redis.conn().await;
    let _: () = conn.del(&key).await.unwrap();
    assert!(!state.reject("cred-1", "invalid_grant", Some("refresh-new")).await.unwrap());
    // A hash missing a field is no token, as `TokenStore::get` reads it.
    let _: () = conn.hset(&key, "refresh", "refresh-new").await.unwrap();
    assert_eq!(tokens.get(&Tag::for_credential("cred-1"), GOOGLE_TOKEN).await.unwrap(), None);
    assert!(state.reject("cred-1", "no Google token", None).await.unwrap());
}

fn refreshed(refresh: &str) -> StoredToken {
    StoredToken {
        access_token: "access-refreshed".into(),
        access_expires_ms: NOW_MS + 3_600_000,
        refresh_token: refresh.into(),
        refresh_expires_ms: 4_000_000_000_000, // year 2096: the key expires then
    }
}

#[tokio::test]
async fn a_refreshed_token_is_stored_only_while_the_refresh_token_it_was_had_with_is() {
    let redis = TestRedis::new("token_put_if_refresh");
    let (_, tokens) = parts(&redis).await;
    let tag = Tag::for_credential("cred-1");
    store(&tokens, "cred-1", "refresh-old").await;
    let mine = tokens.get(&tag, GOOGLE_TOKEN).await.unwrap();

    // Still the one refreshed with: stored, and read back as `put` stores it.
    let token = refreshed("refresh-old");
    assert!(tokens.put_if_refresh(&tag, GOOGLE_TOKEN, &token, NOW_MS, "refresh-old").await.unwrap());
    assert_eq!(tokens.get(&tag, GOOGLE_TOKEN).await.unwrap(), Some(token.clone()));
    let mut conn = redis.conn().await;
    let key = tokens.key(&tag, GOOGLE_TOKEN);
    let expire_at: i64 = redis::cmd("PEXPIRETIME").arg(&key).query_async(&mut conn).await.unwrap();
    assert_eq!(expire_at, token.refresh_expires_ms as i64, "expires with its refresh token, as `put` sets it");
    assert_ne!(mine, Some(token.clone()));
    // A grant bringing a new refresh token is stored with it.
    let rotated = refreshed("refresh-rotated");
    assert!(tokens.put_if_refresh(&tag, GOOGLE_TOKEN, &rotated, NOW_MS, "refresh-old").await.unwrap());
    assert_eq!(tokens.get(&tag, GOOGLE_TOKEN).await.unwrap(), Some(rotated));

    // A person set another meanwhile: the late refresh writes nothing.
    store(&tokens, "cred-1", "refresh-new").await;
    let theirs = tokens.get(&tag, GOOGLE_TOKEN).await.unwrap();
    assert!(!tokens.put_if_refresh(&tag, GOOGLE_TOKEN, &token, NOW_MS, "refresh-rotated").await.unwrap());
    assert_eq!(tokens.get(&tag, GOOGLE_TOKEN).await.unwrap(), theirs);
    // Another credential's token is not looked at.
    let other = Tag::for_credential("cred-2");
    assert!(!tokens.put_if_refresh(&other, GOOGLE_TOKEN, &token, NOW_MS, "refresh-new").await.unwrap());

    // None stored (removed since it was read): not brought back. A hash
    // missing a field is no token, as `TokenStore::get` reads it.
    let _: () = conn.del(&key).await.unwrap();
    assert!(!tokens.put_if_refresh(&tag, GOOGLE_TOKEN, &token, NOW_MS, "refresh-new").await.unwrap());
    assert!(!conn.exists::<_, bool>(&key).await.unwrap(), "nothing written");
    let _: () = conn.hset(&key, "refresh", "refresh-new").await.unwrap();
    assert!(!tokens.put_if_refresh(&tag, GOOGLE_TOKEN, &token, NOW_MS, "refresh-new").await.unwrap());
    assert_eq!(conn.hgetall::<_, Vec<(String, String)>>(&key).await.unwrap().len(), 1, "left as it was");

    // A refresh token already expired is refused, as `put` refuses it.
    store(&tokens, "cred-1", "refresh-new").await;
    let stale = StoredToken { refresh_expires_ms: NOW_MS, ..refreshed("refresh-new") };
    assert!(tokens.put_if_refresh(&tag, GOOGLE_TOKEN, &stale, NOW_MS, "refresh-new").await.is_err());
    assert_eq!(tokens.get(&tag, GOOGLE_TOKEN).await.unwrap(), theirs);
}
