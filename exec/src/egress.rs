//! Where the `http_request` tool may connect: the tenant's `egress:` settings.
//!
//! ```yaml
//! # <tenant>/_tenant/_vance/settings.yaml
//! egress:
//!   allowHosts:                 # these hosts skip the address check
//!     - api.internal.example    # exactly this host, any port
//!     - "*.corp.example"        # any subdomain (not corp.example itself)
//!     - "127.0.0.1:8080"        # this host on this port only
//!   allowPrivate: false         # true: no address check at all (default false)
//! ```
//!
//! By default a request may go to any host whose address is public. Refused are the
//! addresses of the machine and its networks: unspecified (`0.0.0.0/8`, `::`), loopback
//! (`127.0.0.0/8`, `::1`), private (`10/8`, `172.16/12`, `192.168/16`), shared CGNAT
//! (`100.64/10`), link-local (`169.254/16`, `fe80::/10`), unique-local (`fc00::/7`),
//! site-local (`fec0::/10`), multicast, broadcast and the reserved `240/4`, the IETF
//! protocol block `192.0.0/24`, documentation (`192.0.2/24`, `198.51.100/24`,
//! `203.0.113/24`, `2001:db8::/32`) and benchmarking (`198.18/15`) ranges, Teredo
//! (`2001::/32`), local-use NAT64 (`64:ff9b:1::/48`) — and IPv6 forms that embed an IPv4
//! address (IPv4-mapped, IPv4-compatible, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) when the
//! embedded address is refused.
//!
//! The check holds for every spelling of an address (the URL parser normalises `2130706433`,
//! `0x7f.1` and `127.1` to `127.0.0.1`) and for names: a name is resolved once, its refused
//! addresses are dropped, and the connection goes only to an address that was checked (no
//! second lookup between check and connect). Every redirect hop is checked the same way. A
//! host matching an `allowHosts` pattern is connected to whatever it resolves to. A refused
//! request fails with `permission_error` and a `[MAG-EG001]` message naming the setting.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use schemars::JsonSchema;
use serde::Deserialize;

/// The tenant's `egress:` settings: where the `http_request` tool may connect. Private,
/// loopback and reserved addresses are refused unless the host is listed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EgressPolicy {
    /// Host patterns that skip the address check: `host`, `*.domain` (subdomains only),
    /// either optionally with `:port`. IP literals are written as in URLs (`127.0.0.1`,
    /// `[::1]:8080`). Compared case-insensitively.
    #[serde(default)]
    pub allow_hosts: Vec<String>,
    /// Whether every address may be reached, private or not (default false).
    #[serde(default)]
    pub allow_private: bool,
}

/// How a pattern's host part matches.
fn host_matches(pattern: &str, host: &str) -> bool {
    let host = host.trim_end_matches('.');
    match pattern.strip_prefix("*.") {
        Some(domain) => {
            host.len() > domain.len() + 1 && {
                let (sub, rest) = host.split_at(host.len() - domain.len());
                sub.ends_with('.') && rest.eq_ignore_ascii_case(domain)
            }
        }
        None => pattern.eq_ignore_ascii_case(host),
    }
}

/// A pattern split into its host and its port, if it names one.
fn split_pattern(pattern: &str) -> (&str, Option<u16>) {
    let pattern = pattern.trim();
    if let Some(rest) = pattern.strip_prefix('[') {
        // `[v6]` or `[v6]:port`: the host keeps its brackets, as a URL's host does.
        if let Some(end) = rest.find(']') {
            let host = &pattern[..end + 2];
            let port = rest[end + 1..]
                .strip_prefix(':')
                .and_then(|p| p.parse().ok());
            return (host, port);
        }
        return (pattern, None);
    }
    match pattern.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => match port.parse() {
            Ok(port) => (host, Some(port)),
            Err(_) => (pattern, None),
        },
        _ => (pattern, None),
    }
}

/// What the policy says of a URL's host before any lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostVerdict {
    /// Matches an `allowHosts` pattern (or `allowPrivate`): connect to whatever it resolves to.
    Allowed,
    /// A name: resolve it and keep only the addresses [`EgressPolicy::address_allowed`] allows.
    Resolve,
    /// Refused, with the reason.
    Denied(String),
}

impl EgressPolicy {
    /// Whether `host` matches a pattern, whatever its port (the resolver sees no port; the
    /// port is checked on the URL by [`EgressPolicy::check_host`]).
    pub fn host_listed(&self, host: &str) -> bool {
        self.allow_hosts
            .iter()
            .any(|p| host_matches(split_pattern(p).0, host))
    }

    /// Whether a pattern lists `host` (as a URL writes it) at `port`; a pattern without a
    /// port lists every port.
    pub fn lists(&self, host: &str, port: u16) -> bool {
        self.allow_hosts.iter().any(|pattern| {
            let (h, p) = split_pattern(pattern);
            host_matches(h, host) && p.is_none_or(|p| p == port)
        })
    }

    /// The verdict on `host` (as a URL writes it: IPv6 in brackets) at `port`.
    pub fn check_host(&self, host: &str, ip: Option<IpAddr>, port: u16) -> HostVerdict {
        if self.allow_private {
            return HostVerdict::Allowed;
        }
        let mut listed_on_other_port = None;
        for pattern in &self.allow_hosts {
            let (h, p) = split_pattern(pattern);
            if host_matches(h, host) {
                match p {
                    None => return HostVerdict::Allowed,
                    Some(p) if p == port => return HostVerdict::Allowed,
                    Some(p) => listed_on_other_port = Some(p),
                }
            }
        }
        if let Some(p) = listed_on_other_port {
            return HostVerdict::Denied(format!(
                "host {host} is allowed on port {p} only, not {port}: add `{host}:{port}` to \
                 `egress.allowHosts`"
            ));
        }
        match ip {
            Some(ip) if !address_allowed(ip) => HostVerdict::Denied(format!(
                "{host} is a private, loopback or reserved address: add it to \
                 `egress.allowHosts` (or set `egress.allowPrivate: true`)"
            )),
            Some(_) => HostVerdict::Allowed,
            None => HostVerdict::Resolve,
        }
    }

    /// Whether a resolved address of an unlisted name may be connected to.
    pub fn address_allowed(&self, ip: IpAddr) -> bool {
        self.allow_private || address_allowed(ip)
    }
}

/// Whether `ip` is a public address (see the [module docs](self) for what is refused).
pub fn address_allowed(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4_allowed(v4),
        IpAddr::V6(v6) => v6_allowed(v6),
    }
}

fn v4_allowed(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let refused = a == 0                                // this network, unspecified
        || a == 10                                      // private
        || a == 127                                     // loopback
        || (a == 100 && (64..128).contains(&b))         // CGNAT shared space
        || (a == 169 && b == 254)                       // link-local
        || (a == 172 && (16..32).contains(&b))          // private
        || (a == 192 && b == 0 && c == 0)               // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2)               // TEST-NET-1
        || (a == 192 && b == 168)                       // private
        || (a == 198 && (18..20).contains(&b))          // benchmarking
        || (a == 198 && b == 51 && c == 100)            // TEST-NET-2
        || (a == 203 && b == 0 && c == 113)             // TEST-NET-3
        || a >= 224; // multicast, reserved, broadcast
    !refused
}

fn v6_allowed(ip: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(ip) {
        return v4_allowed(v4);
    }
    let s = ip.segments();
    let refused = ip.is_unspecified()
        || ip.is_loopback()
        || (s[0] & 0xfe00) == 0xfc00                    // unique local
        || (s[0] & 0xffc0) == 0xfe80                    // link-local
        || (s[0] & 0xffc0) == 0xfec0                    // site-local (deprecated)
        || (s[0] & 0xff00) == 0xff00                    // multicast
        || (s[0] == 0x2001 && s[1] == 0x0db8)           // documentation
        || (s[0] == 0x2001 && s[1] == 0)                // Teredo
        || (s[0] == 0x0064 && s[1] == 0xff9b && s[2] == 1) // local-use NAT64
        || s[..6] == [0; 6]; // the rest of ::/96 (IPv4-compatible of refused forms)
    !refused
}

/// The IPv4 address an IPv6 address carries: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
/// (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) and 6to4 (`2002:aabb:ccdd::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let o = ip.octets();
    let tail = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    if s[..5] == [0; 5] && (s[5] == 0xffff || (s[5] == 0 && (s[6] != 0 || s[7] > 1))) {
        return Some(tail);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(tail);
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(o[2], o[3], o[4], o[5]));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn denied(s: &str) -> bool {
        !address_allowed(s.parse().unwrap())
    }

    #[test]
    fn private_and_reserved_ranges_are_refused_and_public_ones_pass() {
        for bad in [
            "0.0.0.0",
            "127.0.0.1",
            "127.255.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.255",
            "169.254.169.254",
            "192.0.0.8",
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "198.18.0.1",
            "198.19.255.1",
            "224.0.0.1",
            "239.1.1.1",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b:1::1",
            "2002:7f00:1::",
            "2001:0:4136:e378::1",
        ] {
            assert!(denied(bad), "{bad} should be refused");
        }
        for good in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.1",
            "172.32.0.1",
            "192.0.3.1",
            "198.20.0.1",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
            "64:ff9b::808:808",
            "2002:808:808::",
        ] {
            assert!(!denied(good), "{good} should be allowed");
        }
    }

    #[test]
    fn patterns_match_hosts_subdomains_and_ports() {
        let p = EgressPolicy {
            allow_hosts: vec![
                "api.example.com".into(),
                "*.corp.example".into(),
                "127.0.0.1:8080".into(),
                "[::1]:9000".into(),
            ],
            allow_private: false,
        };
        let ip = |s: &str| Some(s.parse().unwrap());
        assert_eq!(
            p.check_host("API.example.com", None, 443),
            HostVerdict::Allowed
        );
        assert_eq!(
            p.check_host("a.b.corp.example", None, 80),
            HostVerdict::Allowed
        );
        assert_eq!(p.check_host("corp.example", None, 80), HostVerdict::Resolve);
        assert_eq!(
            p.check_host("evilcorp.example", None, 80),
            HostVerdict::Resolve
        );
        assert_eq!(
            p.check_host("127.0.0.1", ip("127.0.0.1"), 8080),
            HostVerdict::Allowed
        );
        assert!(matches!(
            p.check_host("127.0.0.1", ip("127.0.0.1"), 8081),
            HostVerdict::Denied(m) if m.contains("port 8080 only")
        ));
        assert_eq!(p.check_host("[::1]", ip("::1"), 9000), HostVerdict::Allowed);
        assert!(matches!(
            p.check_host("10.0.0.1", ip("10.0.0.1"), 80),
            HostVerdict::Denied(m) if m.contains("egress.allowHosts")
        ));
        assert!(p.host_listed("127.0.0.1"));
        assert!(!p.host_listed("localhost"));
    }
}
