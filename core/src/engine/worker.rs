//! The name this process journals when it executes an attempt again after recovery.

use std::sync::OnceLock;

/// `host:pid`: which machine and which process ran a re-execution, so that a reader of the
/// journal can tell the processes of a run apart (the host from the kernel, else `$HOSTNAME`,
/// else `localhost`).
pub(crate) fn worker_name() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into());
        format!("{host}:{}", std::process::id())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_worker_name_is_host_and_process_id() {
        let name = super::worker_name();
        let (host, pid) = name.rsplit_once(':').expect("host:pid");
        assert!(!host.is_empty());
        assert_eq!(pid, std::process::id().to_string());
    }
}
