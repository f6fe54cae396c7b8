//! Test certificates: a CA, a server certificate for `localhost` and 127.0.0.1 signed by
//! it (`server.crt`, `server.key`), and an unrelated CA (`other-ca.pem`), written to a
//! directory for a test server (PostgreSQL's, MariaDB's).
#![allow(dead_code)]

/// A CA, a server certificate it signed for `localhost` and 127.0.0.1 (`server.crt`,
/// `server.key`, readable by its owner only, as PostgreSQL wants), the CA as `ca.pem`,
/// and an unrelated CA as `other-ca.pem`.
pub fn write_pki(dir: &std::path::Path) {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "liteload test CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&leaf_key, &ca, &ca_key)
            .unwrap();
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.join("other-ca.pem"), other.cert.pem()).unwrap();
    std::fs::write(dir.join("server.crt"), leaf.pem()).unwrap();
    std::fs::write(dir.join("server.key"), leaf_key.serialize_pem()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        dir.join("server.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
}
