//! One module per subcommand but `demo`: its arguments and its `run`.

pub(crate) mod asl;
pub(crate) mod credentials;
pub(crate) mod db;
pub(crate) mod dev;
pub(crate) mod dlq;
pub(crate) mod enrolment;
pub(crate) mod redrive;
pub(crate) mod sandbox;
pub(crate) mod status;
pub(crate) mod tokens;
pub(crate) mod trace;
