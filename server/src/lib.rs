//! magrathea-server
