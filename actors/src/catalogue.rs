//! The tool catalogue: what the assistant can call *now*, as every role
//! sees it.
//!
//! Built-in and host tools are fixed at start; an MCP server's come and go
//! while the runtime runs (it lists new ones, dies, restarts). So the
//! roles never hold a list of tools of their own: they hold the
//! [`Catalogue`] and take its current [`CatalogueView`] once per turn —
//! the tools' descriptions and schemas, and the offline planner over them
//! (its vectors of each description) — and a turn planned on one view is
//! run on that view's tools even if the catalogue changes meanwhile.
//!
//! Rules:
//!
//! 1. **One view per change.** [`Catalogue::refresh`] rebuilds the view
//!    from the registry (re-embedding the descriptions: a few ms per
//!    tool, through the embedding cache) and swaps it in whole; a reader
//!    never sees half a catalogue.
//! 2. **The version names the catalogue.** Each view has a version, bumped
//!    by every refresh that changed the tools; the tool router's
//!    per-conversation cache is kept with it and dropped when it differs
//!    (seed 002 #7: "a mid-conversation MCP refresh invalidates the
//!    cache").
//! 3. **A failed refresh keeps the old view** (the embedder failed): the
//!    error is logged, and the next change tries again.
//! 4. **Every tool is in the view, runnable or not.** A tool that cannot
//!    do anything as configured ([`crate::tools::Tool::unconfigured`]:
//!    `list_dir` without `[tools] file_roots`) is still listed and shown to
//!    a model planner; the offline planner knows it cannot run and lets a
//!    tool that can and does the same stand in for it (an MCP filesystem
//!    server's `list_directory`; see `engram_learning::offline_planner`).
//! 5. **What the model taught outlives the views.** The requests the model
//!    answered well, as example phrasings of their tools
//!    ([`TaughtPhrasings`]), are kept here, beside the views, not in one:
//!    the router adds what each learnt turn taught, the planner reads them
//!    with whatever view its turn took, and a refresh keeps them.

use std::sync::{Arc, RwLock};

use engram_learning::embedder::{EmbedError, Embedder};
use engram_learning::offline_planner::{OfflinePlanner, ToolDescription};
use engram_learning::taught_phrasings::TaughtPhrasings;

use crate::tools::ToolRegistry;

/// The tools as one turn sees them.
pub struct CatalogueView {
    /// Bumped by every refresh that changed the tools (rule 2).
    pub version: u64,
    /// `(name, description, parameters)`, sorted by name.
    pub tools: Arc<Vec<ToolDescription>>,
    /// The offline planner (and the tool router's ranking) over `tools`,
    /// knowing which of them cannot run as configured (rule 4).
    pub offline: Arc<OfflinePlanner>,
}

impl CatalogueView {
    /// Whether a tool called `name` is offered.
    pub fn has(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.0 == name)
    }
}

/// The registry and its current view (see the module docs).
pub struct Catalogue {
    registry: Arc<ToolRegistry>,
    embedder: Arc<dyn Embedder>,
    view: RwLock<Arc<CatalogueView>>,
    /// One refresh at a time: two at once could swap in the older list last.
    refreshing: std::sync::Mutex<()>,
    /// What the model taught the offline planner (rule 5).
    taught: RwLock<TaughtPhrasings>,
}

/// The offline planner over `tools`, told which of them `registry` cannot
/// run as configured and what a path is on disk.
fn offline_planner(
    embedder: &Arc<dyn Embedder>,
    tools: &[ToolDescription],
    registry: &ToolRegistry,
) -> Result<OfflinePlanner, EmbedError> {
    Ok(OfflinePlanner::new(embedder.clone(), tools)?
        .with_unconfigured(&registry.unconfigured())
        .with_paths(Arc::new(crate::tools::files::path_on_disk)))
}

impl Catalogue {
    /// The catalogue of `registry`'s tools, their descriptions embedded
    /// with `embedder`.
    pub fn new(registry: Arc<ToolRegistry>, embedder: Arc<dyn Embedder>) -> Result<Catalogue, EmbedError> {
        let tools = Arc::new(registry.specs());
        let offline = Arc::new(offline_planner(&embedder, &tools, &registry)?);
        let view = CatalogueView { version: 1, tools, offline };
        Ok(Catalogue {
            registry,
            embedder,
            view: RwLock::new(Arc::new(view)),
            refreshing: Default::default(),
            taught: Default::default(),
        })
    }

    /// The current view: take it once per turn.
    pub fn view(&self) -> Arc<CatalogueView> {
        self.view.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// What the model taught the offline planner (rule 5): read it for
    /// [`OfflinePlanner::plan_taught`], briefly — the router waits to add.
    pub fn taught(&self) -> std::sync::RwLockReadGuard<'_, TaughtPhrasings> {
        self.taught.read().unwrap_or_else(|e| e.into_inner())
    }

    /// What the model taught, to add to (the router, rule 5).
    pub fn taught_mut(&self) -> std::sync::RwLockWriteGuard<'_, TaughtPhrasings> {
        self.taught.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The registry the views are built from (it runs the calls).
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }

    /// Rebuilds the view from the registry if its tools changed (rules 1–3).
    pub fn refresh(&self) {
        let _one = self.refreshing.lock().unwrap_or_else(|e| e.into_inner());
        let tools = self.registry.specs();
        let current = self.view();
        if *current.tools == tools {
            return;
        }
        match offline_planner(&self.embedder, &tools, &self.registry) {
            Ok(offline) => {
                let view =
                    CatalogueView { version: current.version + 1, tools: Arc::new(tools), offline: Arc::new(offline) };
                tracing::info!(version = view.version, tools = view.tools.len(), "the tool catalogue changed");
                *self.view.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(view);
            }
            Err(e) => tracing::warn!("the tool catalogue keeps its last view: embedding the new tools failed: {e}"),
        }
    }
}

/// The MCP servers' tools in the catalogue: started with the runtime, kept
/// in step with every change the hub reports (a server ready, a
/// `list_changed`, a server gone or back), each server its own source.
#[cfg(feature = "mcp")]
pub(crate) mod mcp_sources {
    use std::sync::{Arc, OnceLock, Weak};

    use super::Catalogue;
    use crate::tools::mcp::{McpHub, McpSection};

    /// Starts the hub for `section`'s enabled servers (none: no hub) and
    /// puts their tools into `catalogue`, now and at every change.
    pub(crate) fn start(section: &McpSection, catalogue: &Arc<Catalogue>) -> Option<Arc<McpHub>> {
        if !section.servers.values().any(|s| s.enabled) {
            return None;
        }
        // The hub calls back on its own threads; it and the catalogue are
        // reached through weak handles so neither keeps the other alive.
        let slot: Arc<OnceLock<Weak<McpHub>>> = Arc::default();
        let (hub_of, catalogue_of) = (slot.clone(), Arc::downgrade(catalogue));
        let on_change = Arc::new(move || {
            if let (Some(hub), Some(catalogue)) = (hub_of.get().and_then(Weak::upgrade), catalogue_of.upgrade()) {
                sync(&hub, &catalogue);
            }
        });
        let hub = Arc::new(McpHub::start(section, |name| std::env::var(name).ok(), on_change));
        let _ = slot.set(Arc::downgrade(&hub));
        sync(&hub, catalogue);
        for s in hub.status() {
            tracing::info!(server = %s.name, state = %s.state, tools = s.tools, "MCP server");
        }
        Some(hub)
    }

    /// Each server's tools as they are now, source by source.
    fn sync(hub: &McpHub, catalogue: &Catalogue) {
        hub.register_tools(catalogue.registry());
        catalogue.refresh();
    }
}
