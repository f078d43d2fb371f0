//! The Lua scripts, loaded once per process and called by SHA
//! (`redis::Script` falls back to loading a script the server lost).

use redis::Script;
use std::sync::LazyLock;

macro_rules! script {
    ($name:ident, $file:literal) => {
        pub(super) static $name: LazyLock<Script> =
            LazyLock::new(|| Script::new(include_str!(concat!("../../lua/", $file))));
    };
    ($name:ident, $prelude:literal + $file:literal) => {
        pub(super) static $name: LazyLock<Script> = LazyLock::new(|| {
            Script::new(concat!(
                include_str!(concat!("../../lua/", $prelude)),
                include_str!(concat!("../../lua/", $file))
            ))
        });
    };
}

script!(CREATE_QUEUE, "create_queue.lua");
script!(DELETE_QUEUE, "delete_queue.lua");
script!(PURGE_QUEUE, "purge_queue.lua");
script!(SEND, "send.lua");
script!(SEND_DELAYED, "send_delayed.lua");
script!(RECEIVE, "move_message.lua" + "receive.lua");
script!(RECEIPT, "settle_group.lua" + "receipt.lua");
script!(ATTRIBUTES, "attributes.lua");
script!(MOVE_MESSAGES, "move_message.lua" + "move_messages.lua");
script!(LEASE, "lease.lua");
script!(RELEASE_IN_FLIGHT, "settle_group.lua" + "release_in_flight.lua");
