//! A private PostgreSQL for tests: [`TestPostgres::new`] starts one per test
//! binary (`sluice_private_servers::PostgresServer`) and gives each test a
//! database of its own; a test that stops and restarts the server starts
//! its own.

pub use sluice_private_servers::PostgresServer;
use sqlx::PgPool;
use std::sync::{Arc, Mutex, PoisonError, Weak};

static SHARED: Mutex<Weak<PostgresServer>> = Mutex::new(Weak::new());

/// A test's database on the server this test binary shares.
#[derive(Debug, Clone)]
pub struct TestPostgres {
    server: Arc<PostgresServer>,
    pub url: String,
    pub pool: PgPool,
}

impl TestPostgres {
    /// A fresh database named after `test`.
    pub async fn new(test: &str) -> Self {
        let existing = SHARED.lock().unwrap_or_else(PoisonError::into_inner).upgrade();
        let server = match existing {
            Some(server) => server,
            None => {
                let server = Arc::new(PostgresServer::start().await.unwrap_or_else(|e| panic!("{e}")));
                let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
                // Two tests may have started one each; keep the first.
                match shared.upgrade() {
                    Some(first) => first,
                    None => {
                        *shared = Arc::downgrade(&server);
                        server
                    }
                }
            }
        };
        let (url, pool) = server.database(test).await.unwrap_or_else(|e| panic!("{e}"));
        Self { server, url, pool }
    }

    pub fn port(&self) -> u16 {
        self.server.port()
    }
}
