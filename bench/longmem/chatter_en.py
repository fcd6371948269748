"""English chatter: what fills the sessions between the stories (no evidence in it).

It talks about the same kinds of things the stories do (dogs, food, trips, work, running),
as people do, so that a word from a question is rarely only in its evidence.
"""

# ruff: noqa: E501 (a line of a scene is one chat message, its wordings side by side)

from __future__ import annotations

from bench.longmem.script import Scene, scene

POOLS: dict[str, list[object]] = {
    "food": [
        "pizza",
        "ramen",
        "curry",
        "tacos",
        "roast dinner",
        "fish and chips",
        "pho",
        "burritos",
    ],
    "show": [
        "the bake off",
        "Succession",
        "the new Doctor Who",
        "Gladiators",
        "the darts",
        "Love Island",
    ],
    "film": ["Dune", "Paddington 2", "Past Lives", "the new Bond", "Barbie", "Oppenheimer"],
    "team": ["Arsenal", "Villa", "Leeds", "Spurs", "Man City", "Brighton"],
    "snack": ["crisps", "a sausage roll", "biscuits", "a flapjack", "hummus and carrots"],
    "weekday": ["monday", "tuesday", "wednesday", "thursday", "friday"],
    "shop": ["Lidl", "Aldi", "Tesco", "the corner shop", "M&S"],
    "game": ["Catan", "Ticket to Ride", "Codenames", "Wingspan", "Mario Kart"],
    "podcast": ["that true crime one", "No Such Thing As A Fish", "the history one", "Off Menu"],
    "town": ["Whitby", "Margate", "Hebden Bridge", "St Ives", "Stroud"],
    "breed": ["dachshund", "labrador", "greyhound", "poodle", "collie"],
    "drink": ["a pint", "a negroni", "a cup of tea", "a hot chocolate", "an espresso martini"],
    "hours": ["two", "three", "four"],
    "number": ["12", "17", "23", "40"],
}

_SCENES = [
    """
    A: is it just me or is it freezing today | why is it so cold, it's meant to be spring
    B: it's not just you, I've got gloves on indoors | my flat is an igloo
    ?: heating's been on since 6am here
    """,
    """
    A: what's everyone having for dinner | dinner ideas please, my brain is empty
    B: {food}, no question | thinking {food}
    C: cereal. I'm an adult
    A: inspiring
    """,
    """
    A: has anyone watched {show}? | is {show} worth watching?
    B: yes!! no spoilers but episode 3 | I gave up after two episodes
    ?: it's on my list
    """,
    """
    A: saw {film} last night | finally watched {film}
    B: and? | verdict?
    A: honestly better than I expected | loved it, cried twice
    C: I fell asleep in it, no regrets
    """,
    """
    A: {team} really did that to me again | did anyone see the {team} game
    B: I stopped watching at half time, self care | painful
    ?: football was a mistake
    """,
    """
    A: going to {shop}, anyone need anything? | quick {shop} run, shout now
    B: oat milk if they have it | {snack} please, I'll pay you back
    A: got it
    """,
    """
    A: how is it only {weekday} | this week is lasting a month
    B: I thought it was thursday already | don't. just don't
    ?: solidarity
    """,
    """
    A: new {podcast} episode is out | anyone listening to {podcast}?
    B: I listen to it on the bus, it's the only thing keeping me going | started it, hooked
    """,
    """
    A: anyone know a good plumber? the boiler's making the noise again | my boiler is making a noise like a ghost
    B: I've got a number somewhere, will dig it out | have you tried bleeding the radiators
    A: I have no idea what that means
    B: I'll send you a video
    """,
    """
    A: I've been awake since 5, someone's car alarm | neighbours had a party until 3am
    B: nightmare | ear plugs. life changing
    ?: coffee is your friend today
    """,
    """
    A: thinking of cutting my hair short, thoughts | should I get a fringe
    B: do it! | never get a fringe in january
    C: it'll grow back either way
    A: wise words
    """,
    """
    A: saw the cutest {breed} on the train this morning | there was a {breed} in the café wearing a little coat
    B: I need photos of every dog you see from now on | did you pet it
    A: obviously
    """,
    """
    A: game of {game} soon? | I bought {game}, who wants to learn it
    B: yes but I'm terrible | I'm in, I'll lose graciously
    ?: someone has to explain the rules slowly
    """,
    """
    A: anyone been to {town}? thinking of a day trip | day trip to {town} this weekend, recommendations?
    B: the fish and chips by the harbour | go early, it gets rammed
    C: there's a great second-hand bookshop, can't remember the name
    """,
    """
    A: my phone screen cracked. again | dropped my phone in the bath, it's in rice
    B: rice doesn't work, that's a myth | oh no
    A: let me have hope
    """,
    """
    A: who's up for {drink} on friday? | fancy {drink} after work friday?
    B: I'm in | can't this week, next one?
    C: maybe, depends how the week goes
    """,
    """
    A: just did a {hours} hour nap by accident | napped for {hours} hours, I don't know what day it is
    B: power move | iconic
    """,
    """
    A: the bins didn't get collected again | still no bin collection on our street
    B: same here, the foxes are having a party | ring the council
    ?: they're on strike I think
    """,
    """
    A: is anyone else's internet terrible today | my wifi keeps dropping
    B: mine's fine, sorry | turn it off and on again, classic
    A: I did. twice
    """,
    """
    A: it's actually sunny! | sun's out, everyone outside
    B: 20 minutes of summer, enjoy it | finally
    ?: I'm in a windowless room, don't tell me this
    """,
    """
    A: I made bread. it's more of a brick but it's bread | sourdough attempt number 4
    B: photo or it didn't happen | brick bread is still bread
    A: it's a doorstop now
    """,
    """
    A: my train's cancelled again | stuck at the station, signal failure
    B: classic | nightmare, do you want a lift?
    A: bus replacement, the dream
    """,
    """
    A: reading anything good? | need a book for the holiday
    B: just finished a thriller, couldn't put it down | something short, I have no attention span left
    ?: I read the same page four times last night
    """,
    """
    A: went to the gym for the first time in a month | did a spin class, I can't feel my legs
    B: proud of you | welcome back
    A: never again until next month
    """,
    """
    A: happy friday everyone | friday!!!
    B: 🎉 | made it
    ?: what's everyone doing this weekend
    """,
    """
    A: anyone fancy a walk sunday? | sunday walk? weather looks ok
    B: yes if it's flat | depends on the hangover
    C: I'll bring snacks
    """,
    """
    A: I've been on hold with the bank for 40 minutes | the council's phone music is now living in my head
    B: put it on speaker and do something else | the music is the worst part
    """,
    """
    A: what's the best {food} near here? | craving {food}, where's good
    B: the place by the station, not fancy but great | there's a new spot on the high street
    ?: I'll come if you're going
    """,
    """
    A: someone remind me to call my mum later | I keep forgetting to ring my gran back
    B: reminder: call your mum | set an alarm
    A: thank you
    """,
    """
    A: Mario Kart tournament when | who's up for Mario Kart tonight
    B: I'm rusty | I'm Yoshi, no debate
    ?: loser buys pizza
    """,
    """
    A: I think I'm getting a cold | sore throat, please no
    B: honey and lemon | rest up
    A: lemsip and bed
    """,
    """
    A: what did everyone think of the new {show} season? | anyone caught up with {show}?
    B: slower than the last one | loved it actually
    C: haven't started, no spoilers
    """,
    """
    A: the cat from next door has moved into my garden | there's a fox who sleeps on my shed now
    B: you live with it now, those are the rules | name it
    A: it's called Kevin
    """,
    """
    A: trying to eat less meat this month | doing dry january, it's day 3 and I'm struggling
    B: good luck! | you'll be fine
    ?: I lasted 2 days last year
    """,
    """
    A: can someone explain why train tickets cost more than flights | booked a train, it cost more than my flight to Spain
    B: the railcard is your friend | it's a scandal
    """,
    """
    A: I just spent £{number} on plants, help | bought another plant, I have a problem
    B: plants are self care | the plant collection grows
    """,
    """
    A: anyone else doing the crossword today? | stuck on 14 across
    B: send it over | I got as far as 3 down and gave up
    """,
    """
    A: painting the spare room this weekend, wish me luck | putting up shelves, what could go wrong
    B: measure twice | film it for us
    A: there will be holes in the wall
    """,
    """
    A: I'm so tired today | need a nap
    B: same | coffee number three incoming
    """,
    """
    A: haha | lol
    B: 😂 | 💀
    """,
    """
    A: sorry been quiet, mad week | back, sorry, work ate me
    B: welcome back | we missed you
    ?: you've missed nothing, don't worry
    """,
    """
    A: my neighbour is learning the trumpet | someone on my road is learning the drums
    B: oh no | at least it's a hobby
    A: it's 7am
    """,
    """
    A: does anyone have a ladder I can borrow? | need a drill for like ten minutes, anyone?
    B: I've got one, come grab it | in the shed, it's yours
    """,
    """
    A: there's a market on saturday by the river | food festival in the park this weekend
    B: ooh who's going | I'm in if there are dumplings
    ?: there are always dumplings
    """,
    """
    A: just found a tenner in my coat pocket | found £20 in an old jeans pocket, I'm rich
    B: treat yourself | the best feeling
    """,
    """
    A: does anyone actually like running | why do people run for fun
    B: me! it's nice once you get going | no
    C: only for buses
    """,
    """
    A: saw a film at the old cinema last night, they had a cat in the foyer | that little cinema has a cat now
    B: the cinema cat is the best thing about this town | I need to go
    """,
    """
    A: got a parking ticket for being 4 minutes over | £{number} parking fine, I'm fuming
    B: appeal it | that's daylight robbery
    """,
    """
    A: what's the name of that song that goes da da daaa | there's a song stuck in my head and I only know the tune
    B: that's every song | hum it
    A: I can't hum over text
    """,
    """
    A: did anyone else feel the building shake or was it me | was that thunder?
    B: thunder, I nearly dropped my tea | it's biblical out there
    """,
    """
    A: on the bus, it's so hot in here | the tube is a sauna today
    B: open a window | I walked, sweated anyway
    """,
    """
    A: anyone got plans for the bank holiday? | long weekend plans?
    B: sleeping | seeing family
    C: DIY, sadly
    """,
    """
    A: I finally cleaned out the fridge | found something in the fridge that used to be cheese
    B: congratulations | that's a science experiment
    """,
    """
    A: is it rude to leave a group chat | how do you mute a whatsapp group without them knowing
    B: not this one I hope | mute forever, no one knows
    """,
    """
    A: the cake in the kitchen is gone already | who ate the last biscuit
    B: not me | it was me, no regrets
    """,
]


_MORE = [
    """
    A: has anyone tried the new bakery on the corner? | the new bakery does cardamom buns
    B: yes, dangerous, I've been three times | the queue was round the block
    ?: I'm going tomorrow then
    """,
    """
    A: my landlord wants to do an inspection on {weekday} | flat inspection next week, time to hide the mess
    B: hide everything in the oven | shove it all in a cupboard
    A: that's the plan
    """,
    """
    A: what are we all watching tonight? | need something mindless to watch tonight
    B: {show}, always | something with a cooking competition
    C: I'm rewatching the office for the fifth time
    """,
    """
    A: who else is still doing the daily word game | got it in two today!!
    B: four, I'm ashamed | didn't get it at all, the word was ridiculous
    """,
    """
    A: accidentally replied all to the whole company | just sent a message meant for my sister to my boss
    B: noooo | what did it say
    A: nothing bad thank god, just "lol"
    """,
    """
    A: the heating in my building is broken again | no hot water since tuesday
    B: kettle showers, the british experience | have you chased the landlord?
    A: three times
    """,
    """
    A: why is every birthday card £4 now | spent £{number} on birthday cards this month
    B: make your own | it's a racket
    """,
    """
    A: my mum has discovered voice notes | my dad sends me one-word emails, "call", no context
    B: ha, my gran sends 8 minute voice notes | terrifying
    ?: at least they keep in touch
    """,
    """
    A: anyone else get the email about the gym prices going up? | my phone bill went up again
    B: yep, cancelling | everything's going up
    """,
    """
    A: I've started going to bed at 10 and I feel amazing | tried waking up at 6 for a week, it lasted two days
    B: who are you | the 10pm club is great
    """,
    """
    A: tried making {food} from scratch, kitchen looks like a crime scene | attempted {food} at home, it was ok
    B: recipe? | honestly impressive
    A: I'll send it, it's mostly chaos
    """,
    """
    A: does anyone know if the pool reopened? | is the leisure centre pool open again?
    B: reopened monday I think | still shut for repairs
    """,
    """
    A: what's everyone's go to karaoke song | karaoke tonight??
    B: total eclipse of the heart, no shame | I only sing in the shower
    C: mr brightside, every time
    """,
    """
    A: can we talk about how good that sunset was | look out of a window right now
    B: I took 40 photos of it | missed it, was in a meeting
    """,
    """
    A: who wants my old sofa? free to a good home | giving away a bookshelf, collection only
    B: how big? | I might, send a photo
    """,
    """
    A: my flatmate has started a sourdough starter and it lives in the fridge now | someone's kombucha exploded in our kitchen
    B: a pet that needs feeding | cleaning that up must have been fun
    """,
    """
    A: I just booked a dentist appointment, adulting | finally booked the eye test I've been putting off
    B: proud of you | gold star
    """,
    """
    A: is {film} worth seeing at the cinema? | thinking of going to see {film}
    B: yes, big screen for that one | wait for streaming honestly
    """,
    """
    A: it's so quiet in here today | where is everyone
    B: busy week | hiding from my inbox
    ?: present
    """,
    """
    A: bought a new duvet and I'm never getting up again | new pillows, life changed
    B: link? | that's self care
    """,
    """
    A: my phone keeps autocorrecting my name to "Jam" | my phone autocorrects "on my way" to "on my wax"
    B: 😂 | honestly better
    """,
    """
    A: spotted a hedgehog in the garden last night!! | there's a frog in our pond now
    B: cuteness overload | name it
    """,
    """
    A: what's a good gift for someone who has everything? | secret santa budget is £20, ideas?
    B: fancy socks | candles, always candles
    C: experience gift, they can't say they have it already
    """,
    """
    A: who's watching the match later? | big game tonight, anyone coming to the pub?
    B: I'll be there | watching at home, too tired
    """,
    """
    A: there's a leak in the ceiling above my bed | the washing machine flooded the kitchen
    B: oh no, call someone now | towels everywhere?
    A: bucket deployed
    """,
    """
    A: I ate a whole bag of {snack} and feel no remorse | lunch today was {snack}, living my best life
    B: balanced diet | respect
    """,
    """
    A: what time is it in New York right now? | anyone know how to change the time on an oven
    B: no idea | google it
    ?: ask the robot
    """,
    """
    A: my cat knocked my coffee onto my laptop | my laptop just died mid sentence
    B: noooo | rice?
    A: why does everyone say rice
    """,
    """
    A: honestly this week has been a lot | feeling a bit flat today
    B: sending hugs | want to talk about it?
    A: I'm ok, just tired, thank you though
    """,
    """
    A: found my old school reports, "easily distracted" every year | my mum found my primary school drawings
    B: nothing's changed then | post them!!
    """,
    """
    A: the ice cream van plays greensleeves at 9pm outside my window | there's an ice cream van that only plays half a song
    B: the chaos | I'd buy one every time
    """,
    """
    A: what's the best way to get to the airport from here? | train or coach to the airport?
    B: train, less traffic | coach is cheaper but slower
    """,
    """
    A: I've decided to learn to juggle | I'm going to learn the ukulele, don't try to stop me
    B: why | love that for you
    A: why not
    """,
    """
    A: every time I try to fold a fitted sheet I lose a year of my life | ironing is a scam
    B: ball it up and shove it in the cupboard | I haven't ironed since 2016
    """,
    """
    A: my manager just scheduled a meeting called "quick chat" | got a calendar invite with no title
    B: that's terrifying | it's probably nothing
    A: it was about the office plants
    """,
    """
    A: the fox is back in the bins | seagull stole my sandwich right out of my hand
    B: nature is healing | the audacity
    """,
    """
    A: anyone want to go halves on a costco membership | thinking of getting a bread maker, is it worth it
    B: only if we share the giant bag of crisps | I used mine twice
    """,
    """
    A: just realised I've been pronouncing "quinoa" wrong for years | apparently it's "ep-i-tome" not "epi-tome"
    B: we all have | I still say it wrong on purpose
    """,
    """
    A: signed up for a charity 10k in a moment of weakness | doing a sponsored swim next month
    B: I'll sponsor you | legend, send the link
    """,
    """
    A: I need a holiday | counting down the days till my week off
    B: same | how many days?
    A: too many
    """,
]

_THEMED_TEAM = [
    """
    A: is the printer on the 3rd floor working? | the printer is jammed again
    B: it hasn't worked since 2019 | use the one by the lifts
    """,
    """
    A: anyone else in the office today? | who's in tomorrow?
    B: me, by the window | wfh today, sorry
    ?: in on thursday
    """,
    """
    A: the coffee machine is making a new noise | someone broke the coffee machine
    B: it's been doing that all week | facilities know, apparently
    """,
    """
    A: all-hands was long | did anyone follow the all-hands slides
    B: I zoned out at slide 40 | there was a graph, that's all I know
    """,
    """
    A: lunch? | anyone want to grab lunch at 12:30?
    B: yes, the salad place? | can't, back to back meetings
    C: I'll join
    """,
    """
    A: reminder that timesheets are due today | expenses deadline is friday people
    B: thank you for the reminder | oh no
    """,
    """
    A: my laptop decided to update in the middle of a call | teams crashed mid presentation, love that
    B: classic | it senses fear
    """,
    """
    A: cake in the kitchen, it's {B}'s birthday! | someone's brought doughnuts to the kitchen
    B: ooh | on my way
    ?: save me one
    """,
    """
    A: is the air con broken again | it's 28 degrees on this floor
    B: bring a fan | I'm wearing a coat, it's freezing here
    """,
    """
    A: quarterly planning next week, bring ideas | roadmap review is on thursday
    B: will do | more meetings, my favourite
    """,
]

_THEMED_FAMILY = [
    """
    A: are we still on for sunday lunch? | sunday lunch at gran's this week?
    B: yes, 1 o'clock | we'll be there
    ?: I'll bring a crumble
    """,
    """
    A: has anyone spoken to uncle Rob? | did aunt Sue ever get back to you
    B: he rang last week, all fine | not yet
    """,
    """
    A: the kids want to know if they can stay up for the fireworks | can the little ones have a sleepover on friday?
    B: of course | fine by me
    """,
    """
    A: the tv remote was in the fridge again | who moved the remote
    B: it was not me | the dog did it
    """,
    """
    A: photos from the weekend 📷 | look how big the little ones are getting
    B: gorgeous | they're growing so fast
    ?: frame that one
    """,
    """
    A: don't forget to water the tomatoes while we're away | can someone feed the cat on tuesday?
    B: on it | yes, I've still got the key
    """,
    """
    A: did anyone sort the car insurance renewal? | did the boiler man come?
    B: yes, all sorted | he's coming thursday now
    """,
]

_THEMED_CLUB = [
    """
    A: who's doing intervals tuesday? | track session tuesday 7pm
    B: me | I'll be there, slowly
    ?: my calves are still recovering from last week
    """,
    """
    A: it's pouring, are we still running? | rain's biblical, run still on?
    B: we run in all weathers | yes, it's only water
    C: I'll be there in my bin bag
    """,
    """
    A: new route idea: along the canal and back over the bridge | found a lovely trail loop, 8k
    B: ooh send the map | hilly?
    A: a bit
    """,
    """
    A: anyone else's watch lose GPS in the tunnel? | my watch says I ran 14 miles in 10 minutes
    B: every time | you're basically an olympian
    """,
    """
    A: who's coming to the social on friday? | club social, pub quiz, friday
    B: in | maybe
    ?: I'll bring the quiz team energy
    """,
    """
    A: stretching is important people | my hamstrings are tight as a drum
    B: foam roller | yoga saved my knees
    """,
    """
    A: saw a heron by the lake this morning | the geese chased me again
    B: the geese are the real club captains | they always win
    """,
]

_GREETINGS = [
    "A: hi all | hey hey | hello hello",
    "A: anyone around? | is anyone alive in here",
    "A: happy {weekday} | hope everyone's ok",
    """
    A: how's everyone doing | how's the week going?
    B: surviving | good thanks! you?
    """,
    "A: 👋",
]

_FAREWELLS = [
    """
    A: ok I'm off, speak later | right, bed. night all | that's me done for today
    B: night! | later 👋 | bye!
    """,
    "A: gotta run, byeee | off to make dinner, later",
]

_ASIDES = [
    """
    A@: how many grams is a cup of flour? | can you convert 2 cups of flour to grams?
    B: robot to the rescue
    """,
    """
    A@: give us three name ideas for a pub quiz team | we need a quiz team name, any ideas?
    """,
    """
    A@: what's a good present for a five year old who likes dinosaurs?
    B: good question actually
    """,
    """
    A@: how long should I boil an egg for a runny yolk? | soft boiled egg timing?
    """,
    """
    A@: what's the difference between baking soda and baking powder?
    """,
    """
    A@: quick one, what's 15% of 84 | can you split £84 between three people plus a 15% tip?
    """,
    """
    A@: suggest an easy vegetarian dinner with chickpeas | what can I make with a tin of chickpeas and some spinach?
    """,
    """
    A@: what's a polite way to decline a wedding invite? | help me write a short message saying I can't make it on saturday
    B: ooh good use of the bot
    """,
    """
    A@: how do I get red wine out of a carpet?
    B: salt? I heard salt
    """,
    """
    A@: recommend a board game for four people that takes under an hour
    """,
    """
    A@: what's the capital of Australia, settle an argument | is Sydney the capital of Australia?
    B: it's not Sydney, I'm telling you
    """,
    """
    A@: how many steps is 5 kilometres roughly?
    """,
    """
    A@: write a haiku about mondays | give me a two line poem about rain
    ?: beautiful
    """,
    """
    A@: best way to keep basil alive indoors? | why does my basil keep dying
    """,
    """
    A@: how long does it take to drive from London to Edinburgh?
    """,
]


def _scenes(texts: list[str]) -> list[Scene]:
    return [scene(t) for t in texts]


CHATTER = _scenes(_SCENES + _MORE)
FAREWELLS = _scenes(_FAREWELLS)
GREETINGS = _scenes(_GREETINGS)
ASIDES = _scenes(_ASIDES)
THEMED = {
    "team": _scenes(_THEMED_TEAM),
    "family": _scenes(_THEMED_FAMILY),
    "club": _scenes(_THEMED_CLUB),
}
