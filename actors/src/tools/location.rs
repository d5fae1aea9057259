//! `get_location`: where the user is, as configured (`[tools] location`).
//!
//! engram has no positioning of its own; a host with GPS registers its
//! own `get_location`, which replaces this one.

use engram_events::payloads::{SideEffectClass, ToolArgs};
use serde_json::json;

use super::{args, Tool, ToolContext, ToolError, ToolOutput};

/// `get_location`: the configured location, or an error saying how to set it.
#[derive(Clone, Debug, Default)]
pub struct GetLocation {
    location: Option<String>,
}

impl GetLocation {
    /// A tool answering `location` (`None`: not configured).
    pub fn new(location: Option<String>) -> Self {
        GetLocation { location }
    }
}

impl Tool for GetLocation {
    fn name(&self) -> &str {
        "get_location"
    }

    fn description(&self) -> &str {
        "where am I: the user's current location (city, region)"
    }

    fn parameters(&self) -> serde_json::Value {
        json!({ "type": "object", "properties": {}, "additionalProperties": false })
    }

    fn side_effect(&self) -> SideEffectClass {
        SideEffectClass::Read
    }

    fn unconfigured(&self) -> Option<String> {
        self.location.is_none().then(|| "`[tools] location`".to_owned())
    }

    fn call(&self, args: &ToolArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        args::only(args, self.name(), &[])?;
        match &self.location {
            Some(place) => Ok(ToolOutput::trusted(place.clone())),
            None => Err(ToolError::NotConfigured {
                tool: self.name().to_owned(),
                hint: "no location is set; add `[tools] location = \"City, Country\"` to engram.toml \
                       (or set ENGRAM_TOOLS_LOCATION)"
                    .to_owned(),
            }),
        }
    }
}
