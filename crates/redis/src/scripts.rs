//! The Lua scripts, loaded once per process. `redis::Script` sends EVALSHA
//! and falls back to loading the script when the server does not know it
//! (after a restart or a failover), so callers never see NOSCRIPT.

use redis::Script;
use std::sync::LazyLock;

macro_rules! script {
    ($name:ident, $file:literal) => {
        pub(crate) static $name: LazyLock<Script> =
            LazyLock::new(|| Script::new(include_str!(concat!("../lua/", $file))));
    };
    // A shared Lua file first (it defines local functions the script
    // calls: EVAL has no way to share code otherwise), then the script.
    ($name:ident, $library:literal + $file:literal) => {
        pub(crate) static $name: LazyLock<Script> = LazyLock::new(|| {
            Script::new(concat!(include_str!(concat!("../lua/", $library)), include_str!(concat!("../lua/", $file))))
        });
    };
}

script!(SLIDING_WINDOW, "sliding_window.lua");
script!(GCRA_ACQUIRE, "gcra_acquire.lua");
script!(GCRA_RAISE, "gcra_raise.lua");
script!(LOCK_ACQUIRE, "lock_acquire.lua");
script!(COMPARE_AND_DELETE, "holder_check.lua" + "compare_and_delete.lua");
script!(COMPARE_AND_EXTEND, "holder_check.lua" + "compare_and_extend.lua");
script!(GATE_ENTER, "gate_enter.lua");
script!(GATE_CLAIM, "dirty_record.lua" + "gate_claim.lua");
script!(GATE_CONFIRM, "gate_confirm.lua");
script!(DELIVERY_BEGIN, "trace_entry.lua" + "delivery_begin.lua");
script!(DELIVERY_SETTLE, "trace_entry.lua" + "delivery_settle.lua");
script!(DELIVERY_RELEASE, "delivery_release.lua");
script!(GATE_TAKE, "gate_take.lua");
script!(TRACE_APPEND, "trace_entry.lua" + "trace_append.lua");
script!(SNAPSHOT_APPEND, "snapshot_append.lua");
script!(SNAPSHOT_STORE, "snapshot_store.lua");
script!(STREAM_TRIM_ACKNOWLEDGED, "stream_trim_acknowledged.lua");
script!(SHEET_BUFFER, "overflow_into_buffer.lua" + "sheet_buffer.lua");
script!(SHEET_CLAIM, "sheet_claim.lua");
script!(SHEET_SHIFT, "sheet_shift.lua");
script!(SHEET_ADMIT, "overflow_into_buffer.lua" + "sheet_admit.lua");
script!(GROUP_ENTER, "group_enter.lua");
script!(GROUP_LEAVE, "group_leave.lua");
script!(WINDOW_USAGE, "window_usage.lua");
script!(DIRTY_PEEK, "dirty_peek.lua");
script!(DIRTY_DONE, "dirty_done.lua");
script!(CATCH_UP_NEXT, "catch_up_next.lua");
script!(DIRTY_HAND_OVER, "dirty_record.lua" + "dirty_hand_over.lua");
script!(MALL_PARK, "mall_park.lua");
script!(MALL_RELEASE, "mall_release.lua");
script!(HELD_DONE, "held_done.lua");
script!(EPISODE_NOTE, "episode_note.lua");
script!(CREDENTIAL_REJECT, "stored_refresh.lua" + "credential_reject.lua");
script!(TOKEN_PUT_IF_REFRESH, "stored_refresh.lua" + "token_put_if_refresh.lua");
