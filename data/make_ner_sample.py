"""Write the bundled NER sample: English sentences made from templates and name lists written for
crftag (no corpus text), tagged PER, LOC, ORG and MISC in two columns, IOB2.

Dev and test draw half their names from lists that training never sees, so a model must
generalise from word shape and context, not memorise names. Run from the repository root:

    python data/make_ner_sample.py
"""

import random

FIRST = (
    "Anna Peter Maria John Laura Ahmed Yuki Carlos Ingrid Tomasz Fatima Oliver Chloe Raj Elena "
    "Marcus Sofia Daniel Amara Lucas Hannah Kenji Priya Mateo Olga Samuel Leila Victor Nadia Felix"
)
FIRST_NEW = "Greta Hugo Aisha Boris Camila Dmitri Esther Farid Giulia Henrik Imani Jonas Keiko Liam"
LAST = (
    "Smith Novak Garcia Okafor Tanaka Schmidt Rossi Kowalski Haddad Larsen Dubois Moreau Singh "
    "Petrov Costa Nakamura Fischer Jensen Mendes Kaplan Brennan Silva Weber Ivanova Lindqvist"
)
LAST_NEW = (
    "Abernathy Bergstrom Castellano Delacroix Eriksen Fontaine Gutierrez Holloway Ibsen Joshi"
)
CITY = (
    "Berlin Paris Madrid Lagos Tokyo Oslo Warsaw Lisbon Cairo Lima Toronto Nairobi Vienna "
    "Dublin Prague Seoul Athens Quito Manila Helsinki|New York|Buenos Aires|Hong Kong|Cape Town|"
    "Rio de Janeiro"
)
CITY_NEW = "Tbilisi Reykjavik Montevideo Bratislava Tallinn Accra|Kuala Lumpur|Addis Ababa|San Jose"
COUNTRY = (
    "France Germany Spain Nigeria Japan Norway Poland Portugal Egypt Peru Canada Kenya "
    "Austria Ireland Brazil Chile India|South Korea|New Zealand|United States"
)
COUNTRY_NEW = "Georgia Iceland Uruguay Slovakia Estonia Ghana Malaysia Ethiopia|Costa Rica"
ORG = (
    "Siemens Toyota Nokia Reuters Unilever Airbus Ericsson Philips Heineken Maersk|Bank of "
    "Canada|General Motors|Red Cross|World Bank|United Nations|Deutsche Bahn|Lufthansa Group|"
    "Oxford University|Acme Corp|Northwind Traders"
)
ORG_NEW = "Vestas Orkla Skanska|Atlas Copco|Blue Harbor Labs|Union of Teachers|Sterling Mills Ltd"
MISC = (
    "French German Japanese Norwegian Canadian Brazilian Olympic Christmas Easter|World Cup|"
    "Nobel Prize|Tour de France|Euro 2024|English|Spanish"
)
MISC_NEW = "Estonian Ghanaian Icelandic|Davis Cup|Booker Prize|Ryder Cup"

TEMPLATES = [
    "{PER} lives in {LOC} .",
    "{PER} was born in {LOC} in 1984 .",
    "{PER} , a spokesman for {ORG} , said the deal was signed on Tuesday .",
    "{ORG} said on Monday it would cut 2,000 jobs in {LOC} .",
    "Shares in {ORG} rose 3.5 percent in {LOC} on Friday .",
    "{PER} met {PER} in {LOC} to discuss the {MISC} talks .",
    "The {MISC} team beat {LOC} 2-1 in the {MISC} final .",
    "{PER} joined {ORG} as chief executive last year .",
    "Officials in {LOC} said {PER} had left the country .",
    "{ORG} and {ORG} agreed to merge their operations in {LOC} .",
    "{PER} won the {MISC} for the second time .",
    "The {MISC} government in {LOC} denied the report .",
    "According to {ORG} , prices in {LOC} fell by 4 percent .",
    "{PER} told reporters that {ORG} would open an office in {LOC} .",
    "Police in {LOC} arrested two men on Sunday .",
    "{PER} ( {LOC} ) finished third in 2:05.3 .",
    "{LOC} and {LOC} signed a trade agreement .",
    "The meeting was held at the headquarters of {ORG} .",
    "{PER} , who speaks fluent {MISC} , moved to {LOC} .",
    "Rain is expected across {LOC} on Thursday .",
    "{ORG} reported a profit of 12 million dollars .",
    "It was not clear whether {PER} would attend .",
    "The company expects sales to grow next year .",
    "Mr. {LAST} said the {MISC} market was weak .",
    "{PER} scored twice as {ORG} won 3-0 .",
    "Fans in {LOC} celebrated the {MISC} victory late into the night .",
    "{PER} and {PER} will lead the {ORG} delegation to {LOC} .",
    "Analysts at {ORG} expect the central bank of {LOC} to raise rates .",
]


def _names(spec):
    result = []
    for index, part in enumerate(spec.split("|")):
        # The first group is single words separated by spaces; later groups are one name each.
        result.extend([(word,) for word in part.split()] if index == 0 else [tuple(part.split())])
    return result


def pools(new_share):
    def mix(old, new):
        return (_names(old), _names(new), new_share)

    return {
        "FIRST": mix(FIRST, FIRST_NEW),
        "LAST": mix(LAST, LAST_NEW),
        "LOC": (_names(CITY) + _names(COUNTRY), _names(CITY_NEW) + _names(COUNTRY_NEW), new_share),
        "ORG": mix(ORG, ORG_NEW),
        "MISC": mix(MISC, MISC_NEW),
    }


def draw(rng, pool):
    old, new, share = pool
    return rng.choice(new if new and rng.random() < share else old)


def sentence(rng, template, table):
    tokens, tags = [], []
    for word in template.split():
        if word in ("{PER}", "{LOC}", "{ORG}", "{MISC}", "{LAST}"):
            label = word[1:-1]
            if label == "PER":
                name = draw(rng, table["FIRST"]) + draw(rng, table["LAST"])
                if rng.random() < 0.25:
                    name = name[-1:]
            elif label == "LAST":
                name, label = draw(rng, table["LAST"]), "PER"
            else:
                name = draw(rng, table[label])
            tokens.extend(name)
            tags.extend([f"B-{label}"] + [f"I-{label}"] * (len(name) - 1))
        else:
            tokens.append(word)
            tags.append("O")
    return tokens, tags


def write(path, count, seed, new_share):
    rng = random.Random(seed)
    table = pools(new_share)
    with open(path, "w", encoding="utf-8") as handle:
        for _ in range(count):
            tokens, tags = sentence(rng, rng.choice(TEMPLATES), table)
            handle.write("".join(f"{t} {g}\n" for t, g in zip(tokens, tags, strict=True)) + "\n")


if __name__ == "__main__":
    write("data/ner_sample.train.conll", 1000, seed=1, new_share=0.0)
    write("data/ner_sample.dev.conll", 200, seed=2, new_share=0.5)
    write("data/ner_sample.test.conll", 200, seed=3, new_share=0.5)
