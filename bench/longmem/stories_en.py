"""English stories: what people tell in passing and come back to (``script.py``'s language).

Evidence lines are marked ``*label``; questions say the same thing in other words wherever a
person asking would (a "dog" told as "my beagle", a "job" as "the offer").
"""

# ruff: noqa: E501 (a line of a scene is one chat message, its wordings side by side)

from __future__ import annotations

from bench.longmem.script import Story, ask, story

DOGS = ["Biscuit", "Pickle", "Waffles", "Mochi", "Pretzel", "Juniper", "Toast", "Bramble"]
BREEDS = ["beagle", "corgi", "spaniel", "whippet", "staffie", "border terrier"]
SISTERS = ["Lena", "Rosie", "Nadia", "Imogen", "Tess", "Carla"]
CITIES = ["Leeds", "Bristol", "Glasgow", "Cardiff", "Sheffield", "Brighton", "Norwich", "York"]
FAR_CITIES = ["Lisbon", "Porto", "Rotterdam", "Valencia", "Dublin", "Copenhagen", "Vienna"]
COMPANIES = [
    "Brightline",
    "Northwind",
    "Cobalt Health",
    "Fernway",
    "Lumen Labs",
    "Harbour & Finch",
    "Quillsoft",
    "Tallis Group",
]
BIRTHDAYS = ["14th of June", "3rd of March", "22nd of October", "9th of August", "30th of May"]
OLD_CARS = ["Fiesta", "Corsa", "Micra", "Golf", "Yaris"]
NEW_CARS = ["Skoda Octavia", "Mazda 3", "Kia Niro", "Honda Jazz", "Toyota Corolla"]
PARTNERS = [("Sam", "him"), ("Theo", "him"), ("Elena", "her"), ("Marcus", "him"), ("Jess", "her")]
PLACES = ["the Peak District", "Snowdonia", "the Lakes", "the Cairngorms", "Northumberland"]
DATES = ["12th to the 14th", "19th to the 21st", "2nd to the 4th", "26th to the 28th"]
DISHES = ["lasagne", "chilli", "dal", "shepherd's pie", "paella", "mac and cheese"]
DESSERTS = ["tiramisu", "a lemon tart", "brownies", "banoffee pie", "a trifle"]
BANDS = ["Wet Leg", "Fontaines D.C.", "Arlo Parks", "Khruangbin", "The National", "Big Thief"]
VENUES = ["the Albert Hall", "Brixton Academy", "the Barrowland", "the O2 Institute"]
GIG_DATES = ["Friday the 7th", "Saturday the 15th", "Thursday the 20th", "Sunday the 2nd"]
BOOKS = [
    "Piranesi",
    "Klara and the Sun",
    "The Secret History",
    "Tomorrow, and Tomorrow, and Tomorrow",
    "Lessons in Chemistry",
    "Small Things Like These",
]
RESTAURANTS = ["Dumpling Bar", "Little Lagos", "Casa Lupo", "Mama Thai", "Fika", "The Cod Shed"]
AREAS = ["Chinatown", "Peckham", "the Northern Quarter", "Stokes Croft", "Leith"]
LANGUAGES = [("Portuguese", "Lisbon"), ("Japanese", "Osaka"), ("Italian", "Bologna")]
HOBBIES = [("pottery", "ceramics"), ("climbing", "bouldering"), ("salsa", "dance")]
SHOWS = ["Slow Horses", "Severance", "The Bear", "Shrinking", "Taskmaster", "Detectorists"]
PLANTS = [("tomatoes", "chillies"), ("strawberries", "basil"), ("courgettes", "mint")]
NEIGHBOURS = [("Mrs Okafor", "14"), ("Gary", "22"), ("Aisha", "9"), ("Pete", "31")]
AMOUNTS = ["42", "35", "58", "27", "64"]
RENTS = ["1,450", "1,280", "1,625", "1,390"]
DESTINATIONS = [("Crete", "Sicily"), ("Mallorca", "the Algarve"), ("Croatia", "Malta")]
WIFI = ["bramblecottage22", "sheepsheepsheep", "ValleyView!88", "hikers-welcome-7"]
TIMES = [("4:15", "4:30"), ("3:55", "4:10"), ("4:40", "4:50")]
COFFEES = ["an oat flat white with an extra shot", "black, no sugar, as strong as they make it"]
SECRETS = ["a spoonful of white miso", "a pinch of smoked salt", "a splash of bourbon"]
KIDS = ["Poppy", "Alfie", "Isla", "Freddie"]
SCHOOLS = ["St Anne's", "Oakfield Primary", "Millbrook"]
VENUES_OFFSITE = [("Hartwell House", "the Old Mill"), ("Bramley Lodge", "Cotswold Barns")]
LAUNCHES = [("3rd of April", "24th of April"), ("11th of March", "1st of April")]
HIRES = [("Marta", "Spotify"), ("Felix", "Monzo"), ("Grace", "the BBC")]
RACES = ["Manchester", "Edinburgh", "Brighton", "Chester"]
PBS = [("23:41", "22:58"), ("21:30", "20:49"), ("25:12", "24:35")]
MEETS = [("bandstand", "boathouse"), ("café by the lock", "cricket pavilion")]
SHOES = ["Saucony", "Brooks", "Hoka", "New Balance"]
WEEKS = ["three", "four", "six"]

STORIES: dict[str, Story] = {}


def _add(item: Story) -> None:
    STORIES[item.key] = item


_add(
    story(
        "dog",
        [
            """
            B: anyone doing anything fun this weekend? | what's everyone up to saturday?
            A*name: not me, vet trip with {pet}, my {breed} decided a sock was food | vet run for me, {pet} the {breed} ate half a sock again
            C: oh no 😂 is he ok? | classic. is he alright?
            A: he's fine, very proud of himself | he's fine, the sock less so
            """,
            """
            +3-9
            B: how's {pet} these days? | any more sock incidents?
            A: asleep on my feet as we speak, zero remorse | he's moved on to eating post now
            """,
        ],
        [
            ask(
                "single",
                "What's the name of {A}'s dog? | Remind me what {A}'s dog is called?",
                "{pet}",
                "name",
            )
        ],
        {"pet": DOGS, "breed": BREEDS},
    )
)

_add(
    story(
        "adopted",
        [
            """
            A*home: MEET {pet} 🐶 picked her up from the rescue this morning, she's a {breed} mix and already owns the sofa | say hi to {pet}!! the shelter let us bring her home today, {breed} cross, terrified of the kettle
            B: omg the EARS | stop it she's perfect
            C: photos every day please, that's the rule now
            """,
            """
            +2-6
            A: {pet} learned sit. that's it, that's the update | {pet} has discovered the cat next door and will not rest
            ?: the most important update of the week honestly
            """,
        ],
        [
            ask(
                "when",
                "When did {A} bring the rescue dog home? | How long has {A} had the new dog — when did she arrive?",
                "@date",
                "home",
            ),
            ask(
                "single",
                "What did {A} name the dog from the shelter?",
                "{pet}",
                "home",
            ),
        ],
        {"pet": DOGS, "breed": BREEDS},
    )
)

_add(
    story(
        "allergy",
        [
            """
            B: doing a group order from the thai place, shout your picks | ordering lunch for everyone, what do you want?
            C: pad see ew please | massaman for me
            A*nuts: green curry, but please check nothing has peanuts in it, I'm properly allergic | anything with no peanuts — proper allergy, the carry-an-epipen kind
            B: on it | noted, I'll ask them
            """,
        ],
        [
            ask(
                "single",
                "Is there any food {A} has to avoid? | What can't {A} eat?",
                "peanuts",
                "nuts",
            )
        ],
    )
)

_add(
    story(
        "sister",
        [
            """
            A*name: heads up I'll be quiet next week, my sister {sister} is staying with me | my little sister {sister} is crashing at mine all next week so I'm mostly offline
            B: oh nice! is she still in {old}? | fun, where's she coming from?
            A*city: no, she moved to {city} in the spring, she's a nurse on a kids' ward there now | she's in {city} these days, got a job on a children's ward
            C: have a lovely week!
            """,
            """
            +2-5
            B: how was the week with your sister? | did {sister} survive the visit?
            A: exhausting, we did every market in town | good! she made me go to a spin class, never again
            """,
        ],
        [
            ask("single", "What's {A}'s sister called?", "{sister}", "name"),
            ask(
                "single",
                "Which city does {A}'s younger sister live in now? | Where is {A}'s sister based these days?",
                "{city}",
                "city",
            ),
        ],
        {"sister": SISTERS, "city": CITIES, "old": CITIES},
    )
)

_add(
    story(
        "job",
        [
            """
            B: how's work treating everyone? | any news on the job front?
            A*old: still at {old}, still answering the same tickets | same as ever, {old} is {old}
            C: the dream | living the dream
            """,
            """
            +2-6
            A: so... I got an offer!! | some news: I handed in my notice today
            B: WHAT from where | no way, where are you going?
            A*new: {new}, the team that builds the booking app, I start on the 1st | joining {new}, product side, they were the ones I interviewed with in march
            C: congrats!!! drinks on you
            """,
            """
            +1-3
            A*first: first day at {new} done, they gave me a hoodie and a laptop that actually works | day one at the new place: hoodie, laptop, 14 slack channels
            B: how's the team? | how was it?
            A: nice people, no idea what anyone is talking about yet | good! lunch was free, I am easily bought
            """,
        ],
        [
            ask(
                "changed",
                "Where does {A} work these days? | Which company is {A} at now?",
                "{new}",
                "new",
                "old",
            ),
            ask("when", "When did {A} start the new job?", "@date", "first"),
        ],
        {"old": COMPANIES, "new": COMPANIES},
    )
)

_add(
    story(
        "move",
        [
            """
            A*old: so we're actually doing it, moving to {first} when the lease ends | big news: {partner[0]} and I are moving to {first} in the autumn
            B: no!! we'll miss you | whoa, that's a big one
            C: you'll come back for birthdays though right
            """,
            """
            +2-5
            B: how's the move planning going? | have you found a place yet?
            A: slowly. very slowly | boxes everywhere, no flat yet
            """,
            """
            +1-4
            C: any news on the move? | are we still doing a leaving do?
            A*new: change of plan, {first} is off — {partner[0]} got the transfer to {second} instead, so it's {second} now | we're not going to {first} after all, {partner[0]}'s job moved us to {second}
            B: ok I can work with {second}, better food anyway
            """,
        ],
        [
            ask(
                "changed",
                "Which city is {A} moving to? | Where are {A} and {partner[0]} relocating?",
                "{second}",
                "new",
                "old",
            ),
        ],
        {"first": FAR_CITIES, "second": FAR_CITIES, "partner": PARTNERS},
    )
)

_add(
    story(
        "birthday",
        [
            """
            B: when are we doing drinks next? | we should do something soon
            A*date: btw my birthday's the {day}, not that I'm hinting 👀 | fyi I turn 30 on the {day}, just putting it out there
            C: noted 😂 | calendar updated
            """,
        ],
        [
            ask(
                "single",
                "When is {A}'s birthday? | What date does {A} celebrate turning a year older?",
                "{day}",
                "date",
            )
        ],
        {"day": BIRTHDAYS},
    )
)

_add(
    story(
        "car",
        [
            """
            A*old: the {old} failed its MOT again, I think it's time | garage says the {old} needs a new clutch, which is more than it's worth
            B: rip | it had a good run
            """,
            """
            +2-5
            A*new: picked up the {new} today, second hand but it has heated seats and I am a changed person | new car! well, new to me: a {new}, only 30k miles on it
            C: road trip! | finally a car with a working radio
            """,
        ],
        [
            ask(
                "changed",
                "What does {A} drive now? | What car does {A} have at the moment?",
                "{new}",
                "new",
                "old",
            )
        ],
        {"old": OLD_CARS, "new": NEW_CARS},
    )
)

_add(
    story(
        "driving",
        [
            """
            B: good luck today {A}!! you've got this | is the test today?
            A: thanks, feeling sick
            """,
            """
            +0-0
            A*pass: PASSED my driving test!!! first time, one minor for hesitating at a roundabout | I passed!!! the examiner said my reversing was "fine", I'll take it
            C: YESSS | congrats!! who's driving to the beach then
            """,
        ],
        [
            ask(
                "when",
                "When did {A} get the driving licence? | What day did {A} pass the test to drive?",
                "@date",
                "pass",
            )
        ],
    )
)

_add(
    story(
        "keys",
        [
            """
            A*keys: got the keys to the new flat!! 🔑 the kitchen is tiny but the light is amazing | we have KEYS. moving in properly at the weekend, if anyone wants to lift a sofa
            B: yay! housewarming when | congrats!! how many stairs are we talking
            A: fourth floor, no lift, sorry in advance
            """,
        ],
        [
            ask(
                "when",
                "When did {A} get the new place? | What day did {A} pick up the keys to the flat?",
                "@date",
                "keys",
            )
        ],
    )
)

_add(
    story(
        "engaged",
        [
            """
            A*ring: ok I can't keep it in, {partner[0]} proposed last night and I said yes 💍 | WE'RE ENGAGED. {partner[0]} did it on the pier, I cried, a seagull stole a chip, perfect
            B: AAAAAH | no way!!! congratulations
            C: I'm crying at my desk | best news all year
            """,
            """
            +2-6
            B: any wedding plans yet? | have you set a date?
            A: not even close, we're enjoying being engaged | thinking next summer but don't hold me to it
            """,
        ],
        [
            ask(
                "when",
                "When did {A} and {partner[0]} get engaged?",
                "@date",
                "ring",
            ),
            ask("single", "Who is {A} going to marry?", "{partner[0]}", "ring"),
        ],
        {"partner": PARTNERS},
    )
)

_add(
    story(
        "ankle",
        [
            """
            A: rolled my ankle on the stairs at work, very dignified | slipped off a kerb, ankle is the size of a grapefruit
            B: ouch!! is it broken?
            A*weeks: not broken, sprain — physio says {weeks} weeks off running at least | just a bad sprain, I'm banned from running for {weeks} weeks
            C: rest up!
            """,
        ],
        [
            ask(
                "single",
                "How long was {A} told to stay off running after the ankle injury?",
                "{weeks} weeks",
                "weeks",
            )
        ],
        {"weeks": WEEKS},
    )
)

_add(
    story(
        "owes",
        [
            """
            A*owe: {B} you still owe me £{amount} for the gig tickets btw, no rush | reminder for {B}: £{amount} for the tickets whenever you're ready
            B: yes sorry!! payday friday | argh sorry I forgot, sending this week
            """,
        ],
        [
            ask(
                "single",
                "How much money does {B} owe {A}? | What's {B}'s debt to {A} for the tickets?",
                "£{amount}",
                "owe",
            )
        ],
        {"amount": AMOUNTS},
    )
)

_add(
    story(
        "restaurant",
        [
            """
            B: need somewhere for dinner with friends this weekend, not too fancy | any food recs? my cousin's visiting
            A*rec: if you're anywhere near {area}, {place} is my favourite — get the pork buns | {place} in {area}, every time. cheap, loud, best buns in the city
            C: seconding that
            """,
        ],
        [
            ask(
                "single",
                "Which restaurant did {A} recommend for eating out with family?",
                "{place}",
                "rec",
            )
        ],
        {"place": RESTAURANTS, "area": AREAS},
    )
)

_add(
    story(
        "hobby",
        [
            """
            A*start: first {hobby[0]} class tonight, wish me luck | signed up for a {hobby[0]} course, first session this evening
            B: ooh fun | you'll be great
            """,
            """
            +1-4
            B: how's the {hobby[0]} going? | still going to your class?
            A: I made a bowl. it's not round, but it's a bowl | loving it, my teacher is terrifying
            """,
        ],
        [
            ask(
                "when",
                "When did {A} take up {hobby[1]}? | When was {A}'s first lesson in {hobby[1]}?",
                "@date",
                "start",
            )
        ],
        {"hobby": HOBBIES},
    )
)

_add(
    story(
        "language",
        [
            """
            B: what's the app you keep doing on the bus? | who keeps sending the green owl notifications
            A*lang: I'm learning {lang[0]} before the trip to {lang[1]}, 40 day streak, don't break my concentration | it's {lang[0]}! going to {lang[1]} in spring and I refuse to point at menus
            C: say something then | impressive commitment
            """,
        ],
        [
            ask(
                "single",
                "Which language is {A} studying?",
                "{lang[0]}",
                "lang",
            )
        ],
        {"lang": LANGUAGES},
    )
)

_add(
    story(
        "partner",
        [
            """
            B: how did the dinner go?? | so? did the parents approve?
            A*who: {partner[0]} finally met my parents, dad wouldn't stop talking to {partner[1]} about fishing | it went well! mum loved {partner[0]}, dad made {partner[1]} look at the shed
            C: the shed tour is a sign of great respect
            """,
        ],
        [
            ask(
                "single",
                "What is the name of the person {A} is seeing?",
                "{partner[0]}",
                "who",
            )
        ],
        {"partner": PARTNERS},
    )
)

_add(
    story(
        "garden",
        [
            """
            B: anyone good with plants? mine are all dying | how do people keep plants alive
            A*one: I'm growing {plants[0]} on the balcony this year, first ones are nearly ready | the balcony's full of {plants[0]} at the moment, very proud
            """,
            """
            +2-6
            A*two: also put some {plants[1]} in the big pot by the door, they're going mad | update from the balcony: the {plants[1]} are taking over
            C: you're basically a farmer now
            """,
        ],
        [
            ask(
                "multi",
                "What has {A} got growing at home this year? | Which plants is {A} growing?",
                "{plants[0]} and {plants[1]}",
                "one two",
            )
        ],
        {"plants": PLANTS},
    )
)

_add(
    story(
        "gig",
        [
            """
            A*band: got four tickets for {band} at {venue}!! who's in | {band} are playing {venue} and I have tickets, shout if you want one
            B: ME | obviously yes
            C: I'm in
            """,
            """
            +1-3
            B: remind me when the gig is? | what date was the concert again
            A*date: it's {date}, doors at seven | {date}! don't book anything
            """,
        ],
        [
            ask(
                "multi",
                "Which band is the group seeing, where, and on what day?",
                "{band}, {venue}, {date}",
                "band date",
            )
        ],
        {"band": BANDS, "venue": VENUES, "date": GIG_DATES},
    )
)

_add(
    story(
        "bookclub",
        [
            """
            A*old: book club pick for next month is {first}, it's short I promise | next month we're reading {first}, library has copies
            B: ooh I've been meaning to read that
            """,
            """
            +1-3
            A*new: change of plan for book club: nobody could get {first}, so we're doing {second} instead | ok {first} is sold out everywhere, switching to {second}
            C: fine by me, {second} is great
            """,
        ],
        [
            ask(
                "changed",
                "What's the book club reading next? | Which book are they reading for book club?",
                "{second}",
                "new",
                "old",
            )
        ],
        {"first": BOOKS, "second": BOOKS},
    )
)

_add(
    story(
        "cabin",
        [
            """
            A: so are we actually doing a trip this year or just talking about it | who's up for a weekend away somewhere with hills
            B*where: found a cabin near {place} that sleeps six, £{price} between us for two nights | there's a cabin in {place}, hot tub, sleeps six, £{price} all in
            C: hot tub. say no more
            """,
            """
            +1-3
            B*when: ok booked the cabin for the {dates}, send me £{share} each when you can | cabin's booked: {dates}. it's £{share} each
            A: amazing, paying now
            """,
            """
            +0-2
            B*wifi/pin: Cabin wifi password: {wifi} (the router's behind the log basket)
            C: legend
            """,
        ],
        [
            ask(
                "multi",
                "Where is the group's weekend away, and when? | Where and when is the cabin trip?",
                "{place}, {dates}",
                "where when",
            ),
            ask("single", "What's the password for the internet at the cabin?", "{wifi}", "wifi"),
        ],
        {
            "place": PLACES,
            "dates": DATES,
            "price": ["480", "540", "610"],
            "share": ["80", "90", "100"],
            "wifi": WIFI,
        },
    )
)

_add(
    story(
        "potluck",
        [
            """
            A: potluck at mine saturday! what's everyone bringing | hosting saturday, potluck rules, tell me what you're making
            B*b: I'll do my mum's {dish1} | {dish1} from me, the big dish
            C*c: drinks, and maybe bread if I get round to it | I'm on drinks, don't trust me with food
            D*d: dessert's on me — {dessert} | I'll bring {dessert}, it's the only thing I can make
            A: perfect, that's a meal
            """,
        ],
        [
            ask(
                "multi",
                "Who's bringing what to {A}'s potluck? | What did everyone say they'd contribute to the potluck?",
                "{B}: {dish1}; {C}: drinks; {D}: {dessert}",
                "b c d",
            )
        ],
        {"dish1": DISHES, "dessert": DESSERTS},
    )
)

_add(
    story(
        "gamenight",
        [
            """
            A*old: ok game night is officially Thursdays from now on, 7ish at mine | making it official: Thursday game nights, mine, bring snacks
            B: love this
            """,
            """
            +2-5
            B: can we move game night? thursdays kill me now I'm on the late shift | thursdays are getting hard for me, any other night?
            C: wednesdays work for me
            A*new: fine, game night moves to Wednesdays, same time, same snacks | ok Wednesdays from next week then
            """,
        ],
        [
            ask(
                "changed",
                "What night is game night now? | Which evening does the group play board games these days?",
                "Wednesday",
                "new",
                "old",
            )
        ],
    )
)

_add(
    story(
        "marathon",
        [
            """
            A*old: signed up for the {race} marathon!! aiming for sub {times[0]} | entered {race}. goal is under {times[0]}, please hold me to it
            B: you're mad | legend
            """,
            """
            +2-6
            B: how's training? | how are the long runs going?
            A*new: did 20 miles on sunday and it humbled me. new target is {times[1]} and I'm at peace with it | being realistic after the long run: {times[1]} is the goal now
            C: still amazing
            """,
        ],
        [
            ask(
                "changed",
                "What finish time is {A} going for in the marathon?",
                "{times[1]}",
                "new",
                "old",
            )
        ],
        {"race": RACES, "times": TIMES},
    )
)

_add(
    story(
        "coffee",
        [
            """
            B: coffee run, what does everyone want | going to the café, orders?
            A*how: {coffee} please | {coffee}, you know me
            C: tea. just tea.
            """,
        ],
        [ask("single", "How does {A} take coffee?", "{coffee}", "how")],
        {"coffee": COFFEES},
    )
)

_add(
    story(
        "holiday",
        [
            """
            A*old: booked it! a whole week in {dest[0]} doing nothing | holiday booked: a week in {dest[0]}
            B: jealous
            """,
            """
            +2-5
            A*new: airline cancelled our {dest[0]} flights so we rebooked — it's {dest[1]} now, same week | {dest[0]} fell through (thanks airline) so we're going to {dest[1]} instead
            C: honestly {dest[1]} might be better
            """,
        ],
        [
            ask(
                "changed",
                "Where is {A} going on holiday? | What's {A}'s holiday destination?",
                "{dest[1]}",
                "new",
                "old",
            )
        ],
        {"dest": DESTINATIONS},
    )
)

_add(
    story(
        "recipe",
        [
            """
            B: those caramel brownies {A} brought were unreal | who made the salted caramel thing on friday
            A*secret: ha thank you, the trick is {secret} in the caramel | that was me! secret is {secret} in the caramel, don't tell anyone
            C: that explains it
            """,
        ],
        [
            ask(
                "single",
                "What's the secret ingredient in {A}'s caramel?",
                "{secret}",
                "secret",
            )
        ],
        {"secret": SECRETS},
    )
)

_add(
    story(
        "rent",
        [
            """
            A: landlord email. never good | got the letter from the letting agent
            B: uh oh how bad
            A*rent: rent's going up to £{rent} a month from {month} | £{rent} from {month}, up from a number I could actually afford
            C: that's criminal
            """,
        ],
        [
            ask(
                "single",
                "How much will {A}'s rent be after the increase?",
                "£{rent}",
                "rent",
            )
        ],
        {"rent": RENTS, "month": ["January", "March", "September"]},
    )
)

_add(
    story(
        "sparekey",
        [
            """
            B: {A} I'm outside your door, are you in? | think I left my scarf at yours, are you home?
            A: at work! but {neighbour[0]} has my spare | not home, sorry
            A*key: spare key is with {neighbour[0]} at number {neighbour[1]}, just knock | {neighbour[0]} at number {neighbour[1]} keeps my spare key, tell them I sent you
            B: you're a star
            """,
        ],
        [
            ask(
                "single",
                "Who keeps a spare key to {A}'s place?",
                "{neighbour[0]} at number {neighbour[1]}",
                "key",
            )
        ],
        {"neighbour": NEIGHBOURS},
    )
)

_add(
    story(
        "shows",
        [
            """
            A: finished everything I was watching, give me something good | need a new show, I'm desperate
            B*b: {show1}, trust me, it gets good in episode two | you have to watch {show1}
            """,
            """
            +0-2
            C*c: did anyone say {show2} yet? because {show2} | {show2}! I can't believe nobody mentioned it
            A: adding both, thank you
            """,
        ],
        [
            ask(
                "multi",
                "What did people tell {A} to watch? | Which series were recommended to {A}?",
                "{show1} and {show2}",
                "b c",
            )
        ],
        {"show1": SHOWS, "show2": SHOWS},
    )
)

_add(
    story(
        "veggie",
        [
            """
            A*diet/remember: I'm vegetarian, and I don't eat fish either
            B: noted by the robot, very official
            """,
        ],
        [
            ask(
                "single",
                "What did I tell you about what I eat?",
                "vegetarian, no fish",
                "diet",
                asker="A",
            )
        ],
    )
)

# -- family ----------------------------------------------------------------------------------

_add(
    story(
        "firstword",
        [
            """
            A*word: {kid} said her first word today and it was "duck". not mama. duck. | first word from {kid}: "duck". I've never felt so betrayed
            B: 😂😂 to be fair ducks are great
            C: the duck pond trips paid off
            """,
        ],
        [ask("single", "What was {kid}'s first word?", "duck", "word")],
        {"kid": KIDS},
    )
)

_add(
    story(
        "school",
        [
            """
            B: has {kid} got a school place yet? | any news on schools?
            A*school: yes!! {school}, first choice | we got {school}! walking distance, huge relief
            C: brilliant news
            """,
        ],
        [ask("single", "Which school is {kid} going to?", "{school}", "school")],
        {"kid": KIDS, "school": SCHOOLS},
    )
)

_add(
    story(
        "nana",
        [
            """
            A: quick one — I'm at the hospital with {B}, nothing to panic about, they're keeping an eye on her chest | heads up, {B} had a fall, she's in for observation
            C: oh no, which ward? | give her our love
            """,
            """
            +1-2
            A*home: {B}'s home! discharged this afternoon, already complaining about the hospital tea | brought {B} home today, she's on the sofa with the crossword like nothing happened
            C: thank goodness | best news
            """,
        ],
        [
            ask(
                "when",
                "When did {B} come home from hospital?",
                "@date",
                "home",
            )
        ],
    )
)

_add(
    story(
        "kitchen",
        [
            """
            A*old: the kitchen is going to be sage green, I've decided, don't argue | ordered the paint: sage green for the kitchen cupboards
            B: very trendy | nice choice
            """,
            """
            +2-5
            A*new: update: sage looked like hospital walls in our light so we've gone navy for the kitchen | changed our minds on the kitchen, it's navy blue now
            C: navy is classy, good call
            """,
        ],
        [
            ask(
                "changed",
                "What colour is {A}'s kitchen going to be?",
                "navy",
                "new",
                "old",
            )
        ],
    )
)

_add(
    story(
        "shoesize",
        [
            """
            B: what size shoes does dad take? thinking slippers for christmas | quick one, what's dad's shoe size
            A*size: he's a 10, but get an 11 in slippers, he likes them roomy | 10! or 10.5 if they come in halves
            """,
        ],
        [ask("single", "What shoe size is dad?", "10", "size")],
    )
)

_add(
    story(
        "christmas",
        [
            """
            A*host: we'll host christmas this year, I've got the big table now | christmas is at ours this year, no arguments
            B: lovely, what can we bring?
            """,
            """
            +0-2
            B*veg: we'll do all the veg and the roast potatoes | I'll bring the veg and potatoes then
            C*pud: I'm on pudding, the usual | I'll do the christmas pudding and custard
            """,
        ],
        [
            ask(
                "multi",
                "Where is christmas this year, and who's bringing what?",
                "{A}'s; {B}: veg and potatoes; {C}: pudding",
                "host veg pud",
            )
        ],
    )
)

# -- work team -------------------------------------------------------------------------------

_add(
    story(
        "standup",
        [
            """
            A*old: reminder that standup is 9:30 sharp from now on, cameras optional | standup moves to 9:30 from monday
            B: 👍
            """,
            """
            +2-6
            A*new: standup is moving to 9:45 so the school-run people can make it | new standup time: 9:45, starting tomorrow
            C: thank you!!
            """,
        ],
        [
            ask(
                "changed",
                "What time is the morning standup now?",
                "9:45",
                "new",
                "old",
            )
        ],
    )
)

_add(
    story(
        "offsite",
        [
            """
            A*old: offsite is confirmed at {venue[0]}, coach leaves from the office at 8 | we're doing the team away day at {venue[0]}
            B: ooh fancy
            """,
            """
            +1-4
            A*new: bad news, {venue[0]} double-booked us. we've moved the offsite to {venue[1]}, same dates | offsite venue has changed: it's {venue[1]} now
            C: does {venue[1]} have a pool though
            """,
        ],
        [
            ask(
                "changed",
                "Where is the team offsite happening?",
                "{venue[1]}",
                "new",
                "old",
            )
        ],
        {"venue": VENUES_OFFSITE},
    )
)

_add(
    story(
        "launch",
        [
            """
            A*old: launch date is locked: {dates[0]} | we're going live on the {dates[0]}, tell your friends
            B: 🚀
            """,
            """
            +2-5
            A*new: launch is pushed to the {dates[1]}, the payments review took longer than planned | heads up all, go-live slipped to the {dates[1]}
            C: probably for the best honestly
            """,
        ],
        [
            ask(
                "changed",
                "When is the product going live?",
                "{dates[1]}",
                "new",
                "old",
            )
        ],
        {"dates": LAUNCHES},
    )
)

_add(
    story(
        "newhire",
        [
            """
            A*hire: {hire[0]} joins us on monday! she's coming from {hire[1]}, please be nice | say hello to {hire[0]} next week, she's joining from {hire[1]}
            B: yay, more people to eat cake with
            """,
        ],
        [
            ask(
                "single",
                "Where did the new person on the team work before?",
                "{hire[1]}",
                "hire",
            )
        ],
        {"hire": HIRES},
    )
)

_add(
    story(
        "cover",
        [
            """
            A*cover: I'm off from the 12th for two weeks, {B} is covering my stuff while I'm away | annual leave from friday, anything urgent goes to {B}
            B: yep, I've got it | all good, I'll keep an eye on it
            """,
        ],
        [
            ask(
                "single",
                "Who looks after {A}'s work while {A.he}'s on leave?",
                "{B}",
                "cover",
            )
        ],
    )
)

# -- running club ----------------------------------------------------------------------------

_add(
    story(
        "pb",
        [
            """
            A*old: parkrun PB this morning: {pbs[0]}!! | new 5k best: {pbs[0]}, legs are jelly
            B: flying! | amazing, well done
            """,
            """
            +2-6
            A*new: ok the speedwork is working, knocked it down to {pbs[1]} today | another PB!! {pbs[1]} this morning
            C: unstoppable
            """,
        ],
        [
            ask(
                "changed",
                "What is {A}'s fastest 5k?",
                "{pbs[1]}",
                "new",
                "old",
            )
        ],
        {"pbs": PBS},
    )
)

_add(
    story(
        "meet",
        [
            """
            A*old: sunday long run meets at the {meet[0]} at 8, see you there | long runs start from the {meet[0]}, 8am sundays
            B: 👍
            """,
            """
            +2-5
            A*new: from this week we're meeting at the {meet[1]} instead, the car park by the {meet[0]} is shut for works | meeting point has moved to the {meet[1]}
            C: good, more parking there anyway
            """,
        ],
        [
            ask(
                "changed",
                "Where does the sunday long run start from now?",
                "{meet[1]}",
                "new",
                "old",
            )
        ],
        {"meet": MEETS},
    )
)

_add(
    story(
        "kit",
        [
            """
            A: club vest order closes friday, tell me sizes | doing the kit order, what sizes?
            B*b: medium for me please | put me down for a medium
            C*c: small, and can I get shorts too? | small please, and shorts if they do them
            """,
            """
            +0-1
            D*d: sorry late — large for me | large please, not too late I hope
            A: got everyone
            """,
        ],
        [
            ask(
                "multi",
                "What vest sizes did people ask for in the club kit order?",
                "{B}: medium; {C}: small; {D}: large",
                "b c d",
            )
        ],
    )
)

_add(
    story(
        "entered",
        [
            """
            A*in: just entered the {race} half! no going back now | done it, I'm in for the {race} half marathon
            B: yes! we can train together
            """,
        ],
        [ask("when", "When did {A} sign up for the half marathon?", "@date", "in")],
        {"race": RACES},
    )
)

_add(
    story(
        "trainers",
        [
            """
            B: my knees hate my trainers, what do you all run in? | need new shoes, recommendations?
            A*shoe: {shoe} for me, did 400 miles in the last pair | I swear by {shoe}, nothing else
            """,
        ],
        [ask("single", "What brand of running shoes does {A} use?", "{shoe}", "shoe")],
        {"shoe": SHOES},
    )
)

# -- more told over several messages -----------------------------------------------------------

TRIP_CITIES = [
    ("Ljubljana", "Zagreb"),
    ("Kraków", "Prague"),
    ("Ghent", "Bruges"),
    ("Seville", "Granada"),
]

_add(
    story(
        "interrail",
        [
            """
            A*one: made it to {cities[0]}! the train from the airport was 20 minutes, I'm in love | first stop {cities[0]}, already eaten three pastries
            B: photos!! | jealous
            """,
            """
            +0-2
            A*two: {cities[1]} today, walked 25k steps and my feet have filed a complaint | now in {cities[1]}, the old town is ridiculous
            C: living the dream
            """,
        ],
        [
            ask(
                "multi",
                "Which two places did {A} visit on the rail trip? | Where did {A} go on the train holiday?",
                "{cities[0]} and {cities[1]}",
                "one two",
            )
        ],
        {"cities": TRIP_CITIES},
    )
)

_add(
    story(
        "movingday",
        [
            """
            A: moving day is saturday, I will pay in pizza and gratitude | who can help me move on saturday? there's a sofa involved
            B*b: I can do the morning, I'll bring my dad's van | morning's fine, I've got the van
            C*c: I'll come after lunch and build the flatpack stuff | afternoon for me, I'm good with an allen key
            A: you are both heroes
            """,
        ],
        [
            ask(
                "multi",
                "Who offered to help {A} on moving day, and how?",
                "{B}: morning with the van; {C}: afternoon, flatpack",
                "b c",
            )
        ],
    )
)

_add(
    story(
        "birthdaydinner",
        [
            """
            A*where: booked {place} for my birthday dinner, you're all coming | birthday dinner is at {place}, no excuses
            B: yesss
            """,
            """
            +0-2
            C: what time on the night? | remind me what time the dinner is?
            A*time: table's at 8, they'll give it away if we're late | 8 o'clock, and they're strict about it
            """,
        ],
        [
            ask(
                "multi",
                "Where and at what time is {A}'s birthday meal?",
                "{place}, 8",
                "where time",
            )
        ],
        {"place": RESTAURANTS},
    )
)

_add(
    story(
        "doctor",
        [
            """
            A*one: doctor says my blood pressure's up, so the coffee has to go. all of it | gp appointment: blood pressure too high, I'm off caffeine as of today
            B: noooo | how will you survive
            """,
            """
            +1-4
            A*two: also doctor's orders: 30 minutes of walking every day, so if you see me marching round the park that's why | the other thing the doctor wants is a half hour walk a day
            C: I'll join you for some
            """,
        ],
        [
            ask(
                "multi",
                "What changes did the GP ask {A} to make?",
                "no caffeine; walk 30 minutes a day",
                "one two",
            )
        ],
    )
)

# -- more single facts, dates and changes --------------------------------------------------------

TATTOOS = ["a tiny swallow", "a little lemon", "a wave", "a bee"]
VENUES_WEDDING = [("the Old Boathouse", "Fenwick Hall"), ("Ashby Barn", "the Walled Garden")]
FLIGHTS = [("Lisbon", "6:40"), ("Berlin", "21:15"), ("Rome", "17:50")]
CODES = ["4471", "2093", "8816", "5530"]

_add(
    story(
        "promotion",
        [
            """
            A*promo: just got out of my review... I'm a senior now!! | they promoted me!!! senior title and everything
            B: YES | about time, congrats
            C: celebratory {drink} on me
            """,
        ],
        [ask("when", "When did {A} get the promotion?", "@date", "promo")],
        {"drink": ["pint", "cocktail", "cake"]},
    )
)

_add(
    story(
        "bike",
        [
            """
            A*stolen: someone nicked my bike from outside the station, cut straight through the lock | bike's gone. stolen from the rack at work in broad daylight
            B: nooo | that's awful, did you report it?
            A: reported it, not holding my breath
            """,
        ],
        [ask("when", "When was {A}'s bike stolen?", "@date", "stolen")],
    )
)

_add(
    story(
        "tattoo",
        [
            """
            A*ink: did a thing: got {tattoo} tattooed on my ankle | new tattoo! {tattoo}, on my wrist, it barely hurt
            B: show us | love it
            C: your mum is going to have words
            """,
        ],
        [ask("single", "What design did {A} get inked?", "{tattoo}", "ink")],
        {"tattoo": TATTOOS},
    )
)

_add(
    story(
        "venue",
        [
            """
            A*old: wedding venue booked: {venue[0]}, it's got a lawn down to the river | we've got a venue! {venue[0]}, next august
            B: gorgeous
            """,
            """
            +2-6
            A*new: {venue[0]} has gone bust so we've had to rebook — it's {venue[1]} now, same date thank god | venue drama: {venue[0]} cancelled on us, we're at {venue[1]} instead
            C: {venue[1]} is lovely actually | what a nightmare, glad it worked out
            """,
        ],
        [ask("changed", "Where is {A} getting married?", "{venue[1]}", "new", "old")],
        {"venue": VENUES_WEDDING},
    )
)

_add(
    story(
        "flight",
        [
            """
            B: what time are you back on sunday? | need a lift from the airport?
            A*land: flying back from {flight[0]} on sunday, lands at {flight[1]} if anyone's feeling generous | my {flight[0]} flight gets in at {flight[1]}, a lift would be amazing
            B: I'll come and get you
            """,
        ],
        [ask("single", "What time does {A}'s plane get in on sunday?", "{flight[1]}", "land")],
        {"flight": FLIGHTS},
    )
)

_add(
    story(
        "doorcode",
        [
            """
            A*code/pin: Side door code is {code}# (the buzzer's broken)
            B: thank you
            """,
        ],
        [ask("single", "What's the code for the side door?", "{code}", "code")],
        {"code": CODES},
    )
)


def _also(key: str, *more: object) -> None:
    """More questions about a story's messages."""
    from dataclasses import replace

    STORIES[key] = replace(STORIES[key], asks=STORIES[key].asks + tuple(more))  # type: ignore[arg-type]


_also("dog", ask("single", "What breed is {A}'s dog?", "{breed}", "name"))
_also("job", ask("single", "Where did {A} work before switching jobs?", "{old}", "old"))
_also("move", ask("single", "Which city had {A} originally planned to move to?", "{first}", "old"))
_also("marathon", ask("single", "Which city's marathon did {A} enter?", "{race}", "old"))
_also(
    "holiday",
    ask(
        "single",
        "Why did {A} have to change holiday plans?",
        "the airline cancelled the flights",
        "new",
    ),
)
_also(
    "venue",
    ask(
        "single",
        "Why did {A} need a new wedding venue?",
        "the first one went bust / cancelled",
        "new",
    ),
)
_also(
    "doctor",
    ask("single", "What health problem did {A}'s doctor find?", "high blood pressure", "one"),
)
_also("rent", ask("single", "From which month does {A} pay the higher rent?", "{month}", "rent"))
_also("owes", ask("single", "What was the money {B} owes {A} for?", "gig tickets", "owe"))
_also("flight", ask("single", "Which city is {A} flying back from?", "{flight[0]}", "land"))
_also(
    "newhire", ask("single", "What's the name of the person joining the team?", "{hire[0]}", "hire")
)
_also("entered", ask("single", "Which half marathon did {A} enter?", "{race}", "in"))
_also("restaurant", ask("single", "What did {A} say to order at {place}?", "the pork buns", "rec"))
_also("promotion", ask("single", "What is {A}'s job title after the review?", "senior", "promo"))
_also("bookclub", ask("single", "Which book did the book club drop?", "{first}", "old"))
_also("gig", ask("single", "Where is the concert {A} got tickets for?", "{venue}", "band"))
