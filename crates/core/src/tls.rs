//! TLS material read from files, for the clients that connect out (the feed client, the
//! rqlite client).

use std::path::Path;

use crate::error::{Error, Result};

/// The certificates of the PEM file `ca`: at least one, or an error naming the file.
pub(crate) fn ca_certificates(
    ca: &Path,
) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let certs = CertificateDer::pem_file_iter(ca)
        .and_then(|it| it.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|e| Error::usage(format!("{}: not a PEM certificate file: {e}", ca.display())))?;
    if certs.is_empty() {
        return Err(Error::usage(format!(
            "{}: no certificate in it",
            ca.display()
        )));
    }
    Ok(certs)
}
