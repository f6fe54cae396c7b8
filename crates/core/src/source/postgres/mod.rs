//! PostgreSQL as a source: the connection ([`connect`]), what is copied ([`catalog`]),
//! the binary COPY decoded into Arrow batches ([`decode`]) and read on several
//! connections inside one snapshot ([`copy`]). The load itself is
//! [`crate::postgres::import_postgres`].

pub(crate) mod catalog;
pub(crate) mod connect;
pub(crate) mod copy;
pub(crate) mod decode;

pub use connect::is_postgres_url;
