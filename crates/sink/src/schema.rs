//! The `sluice` schema's migrations, compiled into the binary (a Lambda has
//! no migrations directory), applied with sqlx's migrator: each once, in
//! order, checksummed, under PostgreSQL's advisory lock so two drains
//! starting together do not both apply them.

use crate::error::SinkError;
use sqlx::PgPool;
use sqlx::SqlSafeStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};

/// (version, description, SQL) of every migration, oldest first.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "snapshots and events", include_str!("../migrations/0001_snapshots_and_events.sql")),
    (2, "event position", include_str!("../migrations/0002_event_position.sql")),
    (3, "event sources", include_str!("../migrations/0003_event_sources.sql")),
    (4, "byte order keys", include_str!("../migrations/0004_byte_order_keys.sql")),
    (5, "event resource columns", include_str!("../migrations/0005_event_resource_columns.sql")),
];

/// The migrator: the `sluice` schema created first, its bookkeeping table
/// inside it.
pub fn migrator() -> Migrator {
    migrator_through(i64::MAX)
}

/// The migrator of the migrations up to `version` only: a database as an
/// older sluice left it (the migrations' own tests).
pub fn migrator_through(version: i64) -> Migrator {
    let migrations = MIGRATIONS
        .iter()
        .filter(|(v, _, _)| *v <= version)
        .map(|(version, description, sql)| {
            Migration::new(*version, (*description).into(), MigrationType::Simple, sql.into_sql_str(), false)
        })
        .collect();
    let mut migrator = Migrator::with_migrations(migrations);
    migrator.create_schema("sluice");
    migrator.dangerous_set_table_name("sluice._sqlx_migrations");
    migrator
}

/// Applies the migrations `pool`'s database lacks.
pub async fn migrate(pool: &PgPool) -> Result<(), SinkError> {
    Ok(migrator().run(pool).await?)
}
