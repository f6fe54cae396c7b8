//! MySQL and MariaDB as a source: the connection ([`connect`]), what is copied
//! ([`catalog`]), the rows decoded into Arrow batches ([`decode`]) and read on several
//! connections inside one snapshot ([`read`]). The load itself is
//! [`crate::mysql::import_mysql`].

pub(crate) mod catalog;
pub(crate) mod connect;
pub(crate) mod decode;
pub(crate) mod read;

pub use connect::is_mysql_url;
