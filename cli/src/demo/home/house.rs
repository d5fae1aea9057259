//! The demo's home: the tools its MCP server lists, Home-Assistant-like,
//! and the state they act on — a light in every room, a few named devices,
//! a thermostat, timers and a shopping list. Every call answers with one
//! short sentence, or fails saying why (an unknown room or device, a value
//! out of range), so a wrong call shows in the log as a failed step.

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

/// The rooms: each one's English names, then its Italian ones (a reply
/// says "in the kitchen", "in cucina", as the call named it).
const ROOMS: &[(&[&str], &[&str])] = &[
    (&["kitchen"], &["cucina"]),
    (&["living room", "lounge"], &["soggiorno", "salotto"]),
    (&["bedroom"], &["camera", "camera da letto"]),
    (&["bathroom"], &["bagno"]),
    (&["office", "study"], &["studio"]),
    (&["hallway"], &["corridoio", "ingresso"]),
    (&["dining room"], &["sala da pranzo"]),
    (&["guest room"], &["camera degli ospiti"]),
    (&["kids room"], &["cameretta"]),
    (&["laundry room"], &["lavanderia"]),
    (&["garage"], &[]),
    (&["basement"], &["cantina", "taverna"]),
    (&["attic"], &["mansarda", "soffitta"]),
    (&["garden"], &["giardino"]),
    (&["porch", "balcony"], &["terrazzo", "balcone"]),
];

/// The named devices: (names, domain, room index in [`ROOMS`]).
const DEVICES: &[(&[&str], &str, usize)] = &[
    (&["tv", "television", "televisione", "tele"], "media_player", 1),
    (&["christmas lights", "luci di natale"], "light", 1),
    (&["coffee machine", "macchina del caffè", "macchinetta del caffè"], "switch", 0),
    (&["radio"], "media_player", 0),
    (&["dishwasher", "lavastoviglie"], "switch", 0),
    (&["fan", "ventilatore"], "fan", 2),
    (&["reading lamp", "lampada"], "light", 2),
    (&["heated towel rail", "scaldasalviette"], "switch", 3),
    (&["printer", "stampante"], "switch", 4),
    (&["washing machine", "lavatrice"], "switch", 9),
    (&["dehumidifier", "deumidificatore"], "switch", 11),
];

/// The kinds of device `domain` may name.
const DOMAINS: &[&str] = &["light", "switch", "fan", "media_player", "climate"];

/// A tool's listing entry: its name, one-line description, parameters
/// (name → schema) and the parameters it cannot do without.
fn tool(name: &str, description: &str, params: Value, required: &[&str], read_only: bool) -> Value {
    let hint = if read_only { "readOnlyHint" } else { "destructiveHint" };
    json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": params, "required": required},
        "annotations": {hint: true},
    })
}

/// What `tools/list` answers: the home's tools, as a Home Assistant MCP
/// server would list them (its intents' names, optional parameters).
pub fn listing() -> Vec<Value> {
    let name = json!({"type": "string", "description": "Name of one device, as the user calls it"});
    let area = json!({"type": "string", "description": "Name of an area (room) of the home"});
    let domain = json!({"type": "array", "items": {"type": "string", "enum": DOMAINS},
                        "description": "Kinds of device to act on"});
    let target = json!({"name": name, "area": area, "domain": domain});
    let int = |d: &str, max: u32| json!({"type": "integer", "minimum": 0, "maximum": max, "description": d});
    let item = json!({"item": {"type": "string", "description": "The item, as the user said it"}});
    let timer = json!({"name": {"type": "string", "description": "The timer's name, e.g. pasta"}});
    vec![
        tool(
            "HassTurnOn",
            "Turns on a device, or every device of the given kinds in an area",
            target.clone(),
            &[],
            false,
        ),
        tool(
            "HassTurnOff",
            "Turns off a device, or every device of the given kinds in an area",
            target.clone(),
            &[],
            false,
        ),
        tool("HassGetState", "Tells whether a device, or the devices of an area, are on or off", target, &[], true),
        tool(
            "HassLightSet",
            "Sets the brightness of the lights in an area, or of one light",
            json!({"name": name, "area": area, "brightness": int("Brightness in percent", 100)}),
            &["brightness"],
            false,
        ),
        tool(
            "HassClimateSetTemperature",
            "Sets the thermostat's target temperature",
            json!({"temperature": {"type": "number", "description": "Degrees Celsius"}, "area": area}),
            &["temperature"],
            false,
        ),
        tool(
            "HassClimateGetTemperature",
            "Tells the temperature in the home or in one area",
            json!({"area": area}),
            &[],
            true,
        ),
        tool(
            "HassStartTimer",
            "Starts a timer for a number of hours, minutes and seconds, optionally named",
            json!({"hours": int("Hours", 24), "minutes": int("Minutes", 1440), "seconds": int("Seconds", 86400),
                   "name": timer["name"]}),
            &[],
            false,
        ),
        tool("HassCancelTimer", "Cancels a running timer, by its name or the only one", timer.clone(), &[], false),
        tool("HassTimerStatus", "Tells how much time is left on the running timers", timer, &[], true),
        tool("HassShoppingListAddItem", "Adds an item to the shopping list", item.clone(), &["item"], false),
        tool("HassShoppingListCompleteItem", "Crosses an item off the shopping list", item, &["item"], false),
    ]
}

/// A running timer.
struct Timer {
    name: Option<String>,
    length: Duration,
    started: Instant,
}

/// The home's state; [`House::call`] runs a tool on it.
pub struct House {
    /// Per room of [`ROOMS`]: the light's brightness, 0 when off.
    lights: Vec<u8>,
    /// Per device of [`DEVICES`]: on or off.
    devices: Vec<bool>,
    /// The thermostat's target, °C.
    target: f64,
    timers: Vec<Timer>,
    list: Vec<String>,
}

impl Default for House {
    /// Lights off, the TV and the radio on, the heating at 20 °C.
    fn default() -> Self {
        let devices = DEVICES.iter().map(|(names, _, _)| matches!(names[0], "tv" | "radio")).collect();
        House { lights: vec![0; ROOMS.len()], devices, target: 20.0, timers: Vec::new(), list: Vec::new() }
    }
}

/// A call's arguments, read with the error a wrong one deserves.
struct Args<'a>(&'a Map<String, Value>);

impl Args<'_> {
    fn text(&self, key: &str) -> Option<String> {
        self.0.get(key).and_then(Value::as_str).map(|s| s.trim().to_lowercase()).filter(|s| !s.is_empty())
    }

    /// A number, given as one or as a numeric string.
    fn number(&self, key: &str) -> Result<Option<f64>, String> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(Value::String(s)) => {
                s.trim().replace(',', ".").parse().map(Some).map_err(|_| format!("{key}: {s:?} is not a number"))
            }
            Some(v) => Err(format!("{key}: {v} is not a number")),
        }
    }

    /// The room named, and how a reply says "in" it.
    fn room(&self) -> Result<Option<(usize, String)>, String> {
        let Some(area) = self.text("area") else { return Ok(None) };
        let a = area.as_str();
        if let Some(i) = ROOMS.iter().position(|(en, _)| en.contains(&a)) {
            return Ok(Some((i, format!("in the {area}"))));
        }
        match ROOMS.iter().position(|(_, it)| it.contains(&a)) {
            Some(i) => Ok(Some((i, format!("in {area}")))),
            None => Err(format!("There is no area called {area:?} in this home.")),
        }
    }

    fn device(&self) -> Result<Option<(usize, String)>, String> {
        let Some(name) = self.text("name") else { return Ok(None) };
        match DEVICES.iter().position(|(names, _, _)| names.contains(&name.as_str())) {
            Some(i) => Ok(Some((i, name))),
            None => Err(format!("There is no device called {name:?} in this home.")),
        }
    }

    /// The kinds of device named; every kind when none is.
    fn domains(&self) -> Result<Vec<String>, String> {
        let Some(v) = self.0.get("domain") else { return Ok(DOMAINS.iter().map(|d| (*d).to_owned()).collect()) };
        let list: Vec<String> = match v {
            Value::Array(a) => a.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            Value::String(s) => vec![s.clone()],
            _ => Vec::new(),
        };
        match list.iter().find(|d| !DOMAINS.contains(&d.as_str())) {
            Some(bad) => Err(format!("domain: {bad:?} is not one of {}", DOMAINS.join(", "))),
            None if list.is_empty() => Err("domain: name at least one kind of device".to_owned()),
            None => Ok(list),
        }
    }
}

/// "1 minute", "12 minutes and 30 seconds".
fn span(d: Duration) -> String {
    let s = d.as_secs();
    let parts = [(s / 3600, "hour"), (s / 60 % 60, "minute"), (s % 60, "second")];
    let said: Vec<String> = parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n} {unit}{}", if *n == 1 { "" } else { "s" }))
        .collect();
    if said.is_empty() {
        "0 seconds".to_owned()
    } else {
        said.join(" and ")
    }
}

impl House {
    /// Runs `tool` with `args`: the sentence it answers, or why it failed.
    pub fn call(&mut self, tool: &str, args: &Map<String, Value>) -> Result<String, String> {
        let args = Args(args);
        match tool {
            "HassTurnOn" => self.switch(&args, true),
            "HassTurnOff" => self.switch(&args, false),
            "HassGetState" => self.state(&args),
            "HassLightSet" => self.light_set(&args),
            "HassClimateSetTemperature" => self.set_temperature(&args),
            "HassClimateGetTemperature" => self.temperature(&args),
            "HassStartTimer" => self.start_timer(&args),
            "HassCancelTimer" => self.cancel_timer(&args),
            "HassTimerStatus" => Ok(self.timer_status()),
            "HassShoppingListAddItem" => self.add_item(&args),
            "HassShoppingListCompleteItem" => self.complete_item(&args),
            _ => Err(format!("unknown tool {tool}")),
        }
    }

    /// Turns one device, or the devices of the given kinds in a room, on
    /// or off.
    fn switch(&mut self, args: &Args, on: bool) -> Result<String, String> {
        let word = if on { "on" } else { "off" };
        if let Some((d, name)) = args.device()? {
            self.devices[d] = on;
            return Ok(format!("The {name} is {word}."));
        }
        let Some((room, area)) = args.room()? else {
            return Err("Say which device or which area.".to_owned());
        };
        let domains = args.domains()?;
        let mut done = Vec::new();
        if domains.iter().any(|d| d == "light") {
            self.lights[room] = if on { 100 } else { 0 };
            done.push(format!("the light {area}"));
        }
        for (i, (names, domain, r)) in DEVICES.iter().enumerate() {
            if *r == room && domains.iter().any(|d| d == domain) {
                self.devices[i] = on;
                done.push(format!("the {}", names[0]));
            }
        }
        let verb = match done.len() {
            0 => return Err(format!("There is no {} {area}.", domains.join(" or "))),
            1 => "is",
            _ => "are",
        };
        let mut text = done.join(", ");
        text[..1].make_ascii_uppercase();
        Ok(format!("{text} {verb} {word}."))
    }

    fn state(&self, args: &Args) -> Result<String, String> {
        let word = |on: bool| if on { "on" } else { "off" };
        if let Some((d, name)) = args.device()? {
            return Ok(format!("The {name} is {}.", word(self.devices[d])));
        }
        let Some((room, area)) = args.room()? else { return Err("Say which device or which area.".to_owned()) };
        Ok(format!("The light {area} is {}.", word(self.lights[room] > 0)))
    }

    fn light_set(&mut self, args: &Args) -> Result<String, String> {
        let level = match args.number("brightness")? {
            Some(b) if (0.0..=100.0).contains(&b) => b.round() as u8,
            Some(b) => return Err(format!("brightness: {b} is not a percentage")),
            None => return Err("brightness: say how bright, in percent".to_owned()),
        };
        if let Some((d, name)) = args.device()? {
            if DEVICES[d].1 != "light" {
                return Err(format!("The {name} is not a light."));
            }
            self.devices[d] = level > 0;
            return Ok(format!("The {name} is at {level}%."));
        }
        let Some((room, area)) = args.room()? else { return Err("Say which light or which area.".to_owned()) };
        self.lights[room] = level;
        Ok(format!("The light {area} is at {level}%."))
    }

    fn set_temperature(&mut self, args: &Args) -> Result<String, String> {
        match args.number("temperature")? {
            Some(t) if (7.0..=30.0).contains(&t) => {
                self.target = t;
                Ok(format!("The heating is set to {t} °C."))
            }
            Some(t) => Err(format!("temperature: {t} °C is out of the thermostat's range (7–30 °C)")),
            None => Err("temperature: say how many degrees".to_owned()),
        }
    }

    /// A room's reading: the target, a little cooler away from the
    /// living rooms, the same at every call.
    fn temperature(&self, args: &Args) -> Result<String, String> {
        match args.room()? {
            Some((room, area)) => {
                let t = self.target - 0.5 * (room % 4) as f64;
                Ok(format!("It is {t} °C {area}."))
            }
            None => Ok(format!("It is {} °C at home.", self.target)),
        }
    }

    fn start_timer(&mut self, args: &Args) -> Result<String, String> {
        let mut secs = 0.0;
        for (key, unit) in [("hours", 3600.0), ("minutes", 60.0), ("seconds", 1.0)] {
            match args.number(key)? {
                Some(n) if n >= 0.0 => secs += n * unit,
                Some(n) => return Err(format!("{key}: {n} is negative")),
                None => {}
            }
        }
        if secs < 1.0 {
            return Err("Say how long the timer should run.".to_owned());
        }
        let length = Duration::from_secs(secs.round() as u64);
        let name = args.text("name");
        let text = match &name {
            Some(n) => format!("The {n} timer is set for {}.", span(length)),
            None => format!("Timer set for {}.", span(length)),
        };
        self.timers.push(Timer { name, length, started: Instant::now() });
        Ok(text)
    }

    fn cancel_timer(&mut self, args: &Args) -> Result<String, String> {
        let name = args.text("name");
        let at = match &name {
            Some(n) => self.timers.iter().rposition(|t| t.name.as_deref() == Some(n.as_str())),
            None => self.timers.len().checked_sub(1),
        };
        match (at, name) {
            (Some(i), _) => {
                let t = self.timers.remove(i);
                Ok(match t.name {
                    Some(n) => format!("The {n} timer is cancelled."),
                    None => format!("The {} timer is cancelled.", span(t.length)),
                })
            }
            (None, Some(n)) => Err(format!("There is no {n} timer.")),
            (None, None) => Err("There is no timer running.".to_owned()),
        }
    }

    fn timer_status(&self) -> String {
        let left: Vec<String> = self
            .timers
            .iter()
            .map(|t| {
                let left = t.length.saturating_sub(t.started.elapsed());
                format!("{}: {} left", t.name.as_deref().unwrap_or("timer"), span(left))
            })
            .collect();
        if left.is_empty() {
            "No timer is running.".to_owned()
        } else {
            format!("{}.", left.join("; "))
        }
    }

    fn add_item(&mut self, args: &Args) -> Result<String, String> {
        let item = args.text("item").ok_or("item: say what to add")?;
        if self.list.contains(&item) {
            return Ok(format!("{item} is already on the shopping list."));
        }
        self.list.push(item.clone());
        Ok(format!("Added {item} to the shopping list ({} items).", self.list.len()))
    }

    fn complete_item(&mut self, args: &Args) -> Result<String, String> {
        let item = args.text("item").ok_or("item: say what to cross off")?;
        match self.list.iter().position(|i| *i == item) {
            Some(i) => {
                self.list.remove(i);
                Ok(format!("Crossed {item} off the shopping list."))
            }
            None => Err(format!("{item} is not on the shopping list.")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(h: &mut House, tool: &str, args: Value) -> Result<String, String> {
        h.call(tool, args.as_object().unwrap())
    }

    #[test]
    fn calls_change_the_state_and_say_so() {
        let mut h = House::default();
        assert_eq!(
            call(&mut h, "HassTurnOn", json!({"area": "kitchen", "domain": ["light"]})).unwrap(),
            "The light in the kitchen is on."
        );
        assert_eq!(call(&mut h, "HassGetState", json!({"area": "cucina"})).unwrap(), "The light in cucina is on.");
        assert_eq!(call(&mut h, "HassTurnOff", json!({"name": "TV"})).unwrap(), "The tv is off.");
        assert_eq!(
            call(&mut h, "HassLightSet", json!({"area": "living room", "brightness": 30})).unwrap(),
            "The light in the living room is at 30%."
        );
        assert_eq!(
            call(&mut h, "HassClimateSetTemperature", json!({"temperature": "20,5"})).unwrap(),
            "The heating is set to 20.5 °C."
        );
        assert_eq!(call(&mut h, "HassStartTimer", json!({"minutes": 12})).unwrap(), "Timer set for 12 minutes.");
        assert_eq!(
            call(&mut h, "HassShoppingListAddItem", json!({"item": "Milk"})).unwrap(),
            "Added milk to the shopping list (1 items)."
        );
        assert_eq!(
            call(&mut h, "HassShoppingListCompleteItem", json!({"item": "milk"})).unwrap(),
            "Crossed milk off the shopping list."
        );
        assert_eq!(call(&mut h, "HassCancelTimer", json!({})).unwrap(), "The 12 minutes timer is cancelled.");
    }

    #[test]
    fn wrong_calls_fail_saying_why() {
        let mut h = House::default();
        let e = call(&mut h, "HassTurnOn", json!({"area": "the garage", "domain": ["light"]})).unwrap_err();
        assert!(e.contains("no area called \"the garage\""), "{e}");
        assert!(call(&mut h, "HassTurnOn", json!({"area": "garage", "domain": ["fan"]})).is_err());
        assert!(call(&mut h, "HassTurnOn", json!({"area": "garage", "domain": ["toaster"]})).is_err());
        assert!(call(&mut h, "HassClimateSetTemperature", json!({"temperature": 68})).is_err());
        assert!(call(&mut h, "HassStartTimer", json!({})).is_err());
        assert!(call(&mut h, "HassCancelTimer", json!({"name": "pasta"})).is_err());
        assert!(call(&mut h, "HassShoppingListCompleteItem", json!({"item": "bread"})).is_err());
        assert!(call(&mut h, "HassLightSet", json!({"name": "tv", "brightness": 20})).is_err());
    }

    #[test]
    fn every_tool_listed_runs_and_every_room_and_device_has_one_name_each() {
        let mut h = House::default();
        for t in listing() {
            let name = t["name"].as_str().unwrap();
            assert!(!h.call(name, &Map::new()).is_err_and(|e| e.starts_with("unknown tool")), "{name}");
        }
        let rooms = ROOMS.iter().flat_map(|(en, it)| en.iter().chain(it.iter()));
        let mut names: Vec<&str> = rooms.chain(DEVICES.iter().flat_map(|d| d.0.iter())).copied().collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "a name for two things");
    }
}
