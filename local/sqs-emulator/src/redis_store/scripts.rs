//! The Lua scripts, loaded once per process and called by SHA
//! (`redis::Script` falls back to loading a script the server lost).

use redis::Script;
use std::sync::LazyLock;

/// A script from its file, after the files it uses (`"a.lua" + "b.lua"`):
/// a prelude defines functions the next files call.
macro_rules! script {
    ($name:ident, $first:literal $(+ $file:literal)*) => {
        pub(super) static $name: LazyLock<Script> = LazyLock::new(|| {
            Script::new(concat!(
                include_str!(concat!("../../lua/", $first)),
                $(include_str!(concat!("../../lua/", $file)),)*
            ))
        });
    };
}

script!(CREATE_QUEUE, "clock.lua" + "create_queue.lua");
script!(DELETE_QUEUE, "delete_queue.lua");
script!(PURGE_QUEUE, "purge_queue.lua");
script!(SEND, "clock.lua" + "ready_group.lua" + "send.lua");
script!(SEND_DELAYED, "clock.lua" + "send_delayed.lua");
script!(RECEIVE, "clock.lua" + "ready_group.lua" + "move_message.lua" + "receive.lua");
script!(RECEIPT, "clock.lua" + "ready_group.lua" + "settle_group.lua" + "receipt.lua");
script!(ATTRIBUTES, "clock.lua" + "attributes.lua");
script!(MOVE_MESSAGES, "clock.lua" + "ready_group.lua" + "move_message.lua" + "move_messages.lua");
script!(LEASE, "lease.lua");
script!(RELEASE_IN_FLIGHT, "clock.lua" + "ready_group.lua" + "settle_group.lua" + "release_in_flight.lua");
