//! The YAML runtime the commands drive: documents, the interpreter and the state graph, all
//! from `magrathea_yaml`. Commands reach it through this module only.

pub(crate) use magrathea_yaml::{DocumentSource, Scope, YamlRuntime, YamlStartError};

/// `tenant/project`, the scope string journaled in each run's `StartRecord`.
pub(crate) fn scope_string(scope: &Scope) -> String {
    scope.key()
}
